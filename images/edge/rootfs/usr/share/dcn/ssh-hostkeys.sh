#!/bin/sh
# dcn: this host's SSH host keys, made before sshd starts (run by
# ssh.service through its dcn-hostkeys.conf drop-in). The image carries
# none, since every host made from it would share them. `ssh-keygen -A`
# makes only the keys that are missing, so a key a power cut left empty or
# cut short is removed first and made again, a public key that went with
# it is written again from its private key, and the keys are on the disk
# before sshd uses them.
#
# $1: a root directory to work under (the tests); / when not given.
set -eu
root=${1:-}
for key in "$root"/etc/ssh/ssh_host_*_key; do
    [ -e "$key" ] || continue
    if ! public=$(ssh-keygen -y -P '' -f "$key" 2>/dev/null); then
        echo "dcn: SSH host key $key is damaged (a power cut while it was made?); making it again" >&2
        rm -f "$key" "$key.pub"
    elif ! [ -s "$key.pub" ]; then
        echo "dcn: writing $key.pub again from its private key" >&2
        printf '%s\n' "$public" >"$key.pub"
    fi
done
if [ -n "$root" ]; then
    ssh-keygen -A -f "$root"
else
    ssh-keygen -A
fi
sync -f "$root/etc/ssh/"
