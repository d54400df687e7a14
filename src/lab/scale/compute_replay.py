"""dcn lab scale: simulated nova-computes, many in one process.

Written by dcn (src/lab/scale/compute_replay.py) into a carrier container of
the scale harness and run there as one transient unit. Every simulated host
under STATE whose directory holds a `compute-replay` marker gets one, with
the config its real nova-compute would read (STATE/HOST/etc/nova): its own
RabbitMQ user, keystone user, TLS settings and intervals. A host whose
marker goes away is stopped (the harness then starts its real nova-compute
in its place, or none).

What each one sends is what a nova-compute with nova's fake virt driver
sends, built by nova's own code so that the messages are the same:

- at start, the calls of nova-compute's own start (its instances, its
  compute nodes, its evacuations, its service record made or updated),
  then the resource tracker's first audit, then its RPC server (the
  `compute` and `compute.HOST` queues and a `compute_fanout` queue);
- every `report_interval`, the heartbeat (`Service.save`, nova's
  servicegroup db driver);
- the compute manager's periodic tasks that send anything on a host with
  no instances, on their own spacings (oslo.service's scheduler, as in
  nova-compute): the resource tracker's audit with its placement requests
  (nova's ResourceTracker and SchedulerReportClient, over the host's own
  keystone session), the scheduler's instance sync, the instance info
  cache's and power states' lookups, the pending deletes, incomplete
  migrations and expired console tokens.

Each host has its own oslo.messaging transport, so its own connections, as
many as a nova-compute opens. Only the process is shared: one Python
process and one nova import for every host of the carrier, where each
nova-compute takes about 135 MB.
"""

import eventlet

eventlet.monkey_patch()

import argparse  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from keystoneauth1 import loading as ks_loading  # noqa: E402
from openstack import connection  # noqa: E402
from oslo_config import cfg  # noqa: E402
import oslo_messaging as messaging  # noqa: E402
from oslo_messaging import opts as messaging_opts  # noqa: E402
from oslo_messaging._metrics import client as metrics_client  # noqa: E402
from oslo_service import periodic_task  # noqa: E402

import nova.conf  # noqa: E402
from nova import baserpc  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import exception  # noqa: E402
from nova import objects  # noqa: E402
from nova import rpc  # noqa: E402
from nova.compute import resource_tracker  # noqa: E402
from nova.conf import utils as confutils  # noqa: E402
from nova.conductor import rpcapi as conductor_rpcapi  # noqa: E402
from nova.objects import base as objects_base  # noqa: E402
from nova.objects import service as service_obj  # noqa: E402
from nova.scheduler.client import query  # noqa: E402
from nova.scheduler.client import report  # noqa: E402
from nova.virt import fake  # noqa: E402

CONF = nova.conf.CONF
LOG = logging.getLogger("dcn.compute_replay")
MARKER = "compute-replay"

# Options of the periodic tasks this file leaves out because they send
# nothing at nova's defaults. A config that turns one on is refused rather
# than replayed without it.
OFF_BY_DEFAULT = {
    "instance_build_timeout": 0,
    "reboot_timeout": 0,
    "rescue_timeout": 0,
    "resize_confirm_window": 0,
    "shelved_offload_time": 0,
    "instance_usage_audit": False,
    "volume_usage_poll_interval": 0,
    "reclaim_instance_interval": 0,
}

# The host whose code runs in this green thread: nova's objects reach the
# conductor through one indirection API, and each host's calls must go over
# its own connection.
_current = threading.local()


class PerHostConductor(object):
    """NovaObject.indirection_api: the calling host's own conductor client."""

    def _api(self):
        return _current.sim.conductor

    def object_class_action_versions(self, ctxt, objname, objmethod,
                                     object_versions, args, kwargs):
        return self._api().object_class_action_versions(
            ctxt, objname, objmethod, object_versions, args, kwargs)

    def object_action(self, ctxt, objinst, objmethod, args, kwargs):
        return self._api().object_action(ctxt, objinst, objmethod, args,
                                         kwargs)

    def object_backport_versions(self, ctxt, objinst, object_versions):
        return self._api().object_backport_versions(ctxt, objinst,
                                                    object_versions)


def config_args(root):
    etc = os.path.join(root, "etc/nova")
    return ["--config-file", os.path.join(etc, "nova.conf"),
            "--config-dir", os.path.join(etc, "nova-compute.conf.d")]


def host_conf(root):
    """The host's own config, read as its nova-compute would read it."""
    conf = cfg.ConfigOpts()
    # oslo.messaging's own options, which it registers on oslo.config's
    # global CONF (its metrics' only there, at import).
    for group, opts in messaging_opts.list_opts():
        conf.register_opts(opts, group=group)
    conf.register_opts(metrics_client.oslo_messaging_metrics,
                       group="oslo_messaging_metrics")
    nova.conf.netconf.register_opts(conf)
    # nova.conf.placement.register_opts, in a group of this ConfigOpts' own
    # (nova's module-level group object keeps the options it is given, and
    # a second ConfigOpts would clash with the first's).
    ks_loading.register_session_conf_options(conf, "placement")
    ks_loading.register_auth_conf_options(conf, "placement")
    conf.register_opts(confutils.get_ksa_adapter_opts("placement"),
                       group="placement")
    for name in ("version", "min_version", "max_version"):
        # Removed options openstacksdk still reads: nova's placeholders.
        conf.register_opt(cfg.Opt(name, type=lambda _: None),
                          group="placement")
    conf(config_args(root), project="nova", default_config_files=[])
    return conf


def with_transport(transport, make):
    """nova's rpc module builds its clients and servers on its global
    transport: this host's for the time of `make`. Nothing in between
    yields to another green thread."""
    saved = rpc.TRANSPORT
    rpc.TRANSPORT = transport
    try:
        return make()
    finally:
        rpc.TRANSPORT = saved


def make_tasks_class():
    """nova-compute's periodic tasks that send something on a host with no
    instances, with nova's spacings: made after CONF is read, as nova's
    compute manager is imported after nova-compute reads its config."""

    class Tasks(periodic_task.PeriodicTasks):
        def __init__(self, sim):
            super(Tasks, self).__init__(CONF)
            self.sim = sim

        # ComputeManager._sync_scheduler_instance_info
        @periodic_task.periodic_task(
            spacing=CONF.scheduler_instance_sync_interval)
        def _sync_scheduler_instance_info(self, context):
            if not CONF.filter_scheduler.track_instance_changes:
                return
            context = context.elevated()
            instances = objects.InstanceList.get_by_host(
                context, self.sim.host, expected_attrs=[], use_slave=True)
            self.sim.query_client.sync_instance_info(
                context, self.sim.host, [i.uuid for i in instances])

        # ComputeManager._heal_instance_info_cache: with no instances, the
        # list to heal is rebuilt every time.
        @periodic_task.periodic_task(
            spacing=CONF.heal_instance_info_cache_interval)
        def _heal_instance_info_cache(self, context):
            if not CONF.heal_instance_info_cache_interval:
                return
            objects.InstanceList.get_by_host(
                context, self.sim.host, expected_attrs=[], use_slave=True)

        # ComputeManager._sync_power_states
        @periodic_task.periodic_task(spacing=CONF.sync_power_state_interval,
                                     run_immediately=True)
        def _sync_power_states(self, context):
            objects.InstanceList.get_by_host(
                context, self.sim.host, expected_attrs=[], use_slave=True)
            self.sim.driver.get_num_instances()

        # ComputeManager.update_available_resource
        @periodic_task.periodic_task(spacing=CONF.update_resources_interval)
        def update_available_resource(self, context):
            self.sim.audit(context, startup=False)

        # ComputeManager._run_image_cache_manager_pass (the fake driver
        # says it has an image cache)
        @periodic_task.periodic_task(
            spacing=CONF.image_cache.manager_interval,
            external_process_ok=True)
        def _run_image_cache_manager_pass(self, context):
            filters = {"deleted": False, "soft_deleted": True,
                       "host": [self.sim.host]}
            objects.InstanceList.get_by_filters(
                context, filters, expected_attrs=[], use_slave=True)

        # ComputeManager._run_pending_deletes
        @periodic_task.periodic_task(spacing=CONF.instance_delete_interval)
        def _run_pending_deletes(self, context):
            filters = {"deleted": True, "soft_deleted": False,
                       "host": self.sim.host, "cleaned": False}
            ctxt = context.elevated(read_deleted="yes")
            objects.InstanceList.get_by_filters(
                ctxt, filters, expected_attrs=["system_metadata"],
                use_slave=True)

        # ComputeManager._cleanup_incomplete_migrations
        @periodic_task.periodic_task(spacing=CONF.instance_delete_interval)
        def _cleanup_incomplete_migrations(self, context):
            objects.MigrationList.get_by_filters(
                context, {"host": self.sim.host, "status": "error"})

        # ComputeManager._cleanup_expired_console_auth_tokens
        @periodic_task.periodic_task(spacing=CONF.instance_delete_interval)
        def _cleanup_expired_console_auth_tokens(self, context):
            objects.ConsoleAuthToken.clean_expired_console_auths(context)

    return Tasks


class SimCompute(object):
    """One simulated host's nova-compute."""

    def __init__(self, tasks_class, host, root):
        self.root = root
        conf = host_conf(root)
        self.host = conf.host
        if self.host != host:
            raise RuntimeError("%s: its config names host %r" %
                               (root, self.host))
        self.my_ip = conf.my_ip
        exmods = rpc.get_allowed_exmods()
        self.transport = messaging.get_rpc_transport(
            conf, allowed_remote_exmods=exmods)
        self.conductor = with_transport(self.transport,
                                        conductor_rpcapi.ConductorAPI)
        self.query_client = with_transport(self.transport,
                                           query.SchedulerQueryClient)
        auth = ks_loading.load_auth_from_conf_options(conf, "placement")
        session = ks_loading.load_session_from_conf_options(
            conf, "placement", auth=auth)
        placement = connection.Connection(
            session=session, oslo_conf=conf,
            service_types={"placement"}).placement
        self.reportclient = report.SchedulerReportClient(adapter=placement)
        self.driver = fake.FakeDriver(None)
        self.rt = resource_tracker.ResourceTracker(
            self.host, self.driver, reportclient=self.reportclient)
        self.tasks = tasks_class(self)
        self.rpcserver = None
        self.service_ref = None
        self.stopped = False

    def run(self):
        _current.sim = self
        while not self.stopped:
            try:
                self.start()
                break
            except Exception:
                LOG.exception("%s: start failed; trying again in 10 s",
                              self.host)
                eventlet.sleep(10)
        if self.stopped:
            return
        spawn_logged(self.host, self.report_loop)
        spawn_logged(self.host, self.periodic_loop)
        LOG.info("%s: started", self.host)

    def start(self):
        """nova.service.Service.start for nova-compute, with the compute
        manager's init_host and pre_start_hook."""
        ctxt = nova_context.get_admin_context()
        self.driver.init_host(host=self.host)
        objects.InstanceList.get_by_host(
            ctxt, self.host,
            expected_attrs=["info_cache", "metadata", "numa_topology"])
        try:
            objects.ComputeNodeList.get_all_by_host(ctxt, self.host)
        except exception.NotFound:
            pass
        objects.MigrationList.get_by_filters(ctxt, {
            "source_compute": self.host,
            "status": ["accepted", "pre-migrating", "done"],
            "migration_type": "evacuation"})
        ref = objects.Service.get_by_host_and_binary(ctxt, self.host,
                                                     "nova-compute")
        if ref is None:
            ref = objects.Service(ctxt)
            ref.host = self.host
            ref.binary = "nova-compute"
            ref.topic = "compute"
            ref.report_count = 0
            ref.create()
        elif ref.version != service_obj.SERVICE_VERSION:
            ref.version = service_obj.SERVICE_VERSION
            ref.save()
        self.service_ref = ref
        self.audit(ctxt, startup=True)
        if self.rpcserver is None:
            target = messaging.Target(topic="compute", server=self.host)
            endpoints = [baserpc.BaseRPCAPI("compute", None)]
            self.rpcserver = with_transport(
                self.transport,
                lambda: rpc.get_server(
                    target, endpoints, objects_base.NovaObjectSerializer()))
            self.rpcserver.start()

    def audit(self, ctxt, startup):
        """ComputeManager.update_available_resource for its one node."""
        nodes = set(self.driver.get_available_nodes())
        try:
            in_db = objects.ComputeNodeList.get_all_by_host(
                ctxt, self.host, use_slave=True)
        except exception.NotFound:
            in_db = []
        self.rt.clean_compute_node_cache(in_db)
        for node in nodes:
            # The resource tracker reads CONF.my_ip for the node's address
            # before its first call out: this host's, in this green thread.
            CONF.set_override("my_ip", self.my_ip)
            try:
                self.rt.update_available_resource(ctxt, node, startup=startup)
            except Exception:
                LOG.exception("%s: auditing node %s failed", self.host, node)

    def report_loop(self):
        """nova's servicegroup db driver: a heartbeat every report_interval,
        the first 5 s after the start."""
        _current.sim = self
        eventlet.sleep(5)
        while not self.stopped:
            started = time.monotonic()
            try:
                self.service_ref.report_count += 1
                self.service_ref.save()
            except Exception as e:
                LOG.warning("%s: reporting failed: %s", self.host, e)
            eventlet.sleep(max(0.0, CONF.report_interval -
                               (time.monotonic() - started)))

    def periodic_loop(self):
        """nova.service.Service's periodic tasks timer: a random first delay
        up to periodic_fuzzy_delay, then each round when the next task is
        due. (nova-compute sets no periodic_interval_max: the tasks'
        spacings alone decide.)"""
        _current.sim = self
        if CONF.periodic_fuzzy_delay:
            eventlet.sleep(random.randint(0, CONF.periodic_fuzzy_delay))
        ctxt = nova_context.get_admin_context()
        while not self.stopped:
            try:
                idle = self.tasks.run_periodic_tasks(ctxt)
            except Exception:
                LOG.exception("%s: periodic tasks failed", self.host)
                idle = periodic_task.DEFAULT_INTERVAL
            eventlet.sleep(idle)

    def stop(self):
        self.stopped = True
        if self.rpcserver is not None:
            self.rpcserver.stop()
            self.rpcserver.wait()
        self.transport.cleanup()
        LOG.info("%s: stopped", self.host)


def spawn_logged(host, loop):
    """A green thread whose end by an exception is in the log file (eventlet
    would print it on stderr only)."""
    def logged():
        try:
            loop()
        except Exception:
            LOG.exception("%s: %s stopped", host, loop.__name__)
    return eventlet.spawn(logged)


def marked_hosts(state):
    try:
        names = os.listdir(state)
    except FileNotFoundError:
        return {}
    return {n: os.path.join(state, n) for n in sorted(names)
            if os.path.exists(os.path.join(state, n, MARKER))}


def read_global_conf(root):
    """What every host shares (intervals, allocation ratios, reserved
    resources) from one host's config, as nova-compute reads its own."""
    rpc.set_defaults(control_exchange="nova")
    CONF(config_args(root), project="nova", default_config_files=[])
    for opt, off in OFF_BY_DEFAULT.items():
        if CONF[opt] != off:
            raise SystemExit(
                "%s sets %s = %r: the replayer does not send what that "
                "periodic task sends; remove it or use real nova-computes"
                % (root, opt, CONF[opt]))
    rpc.init(CONF)
    objects.register_all()
    objects_base.NovaObject.indirection_api = PerHostConductor()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", required=True)
    parser.add_argument("--log-file", required=True)
    parser.add_argument("--scan-seconds", type=float, default=5.0)
    args = parser.parse_args()
    logging.basicConfig(
        filename=args.log_file, level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    running = {}
    tasks_class = None
    while True:
        marked = marked_hosts(args.state)
        if marked and tasks_class is None:
            read_global_conf(next(iter(marked.values())))
            tasks_class = make_tasks_class()
        for name, root in marked.items():
            if name not in running:
                try:
                    sim = SimCompute(tasks_class, name, root)
                except Exception:
                    LOG.exception("%s: not started", name)
                    continue
                running[name] = sim
                spawn_logged(name, sim.run)
        for name in [n for n in running if n not in marked]:
            running.pop(name).stop()
        eventlet.sleep(args.scan_seconds)


if __name__ == "__main__":
    main()
