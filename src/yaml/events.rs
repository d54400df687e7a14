//! The libyaml event stream of a text, one event at a time, through
//! `unsafe-libyaml`: the very parser (same crate, same version) that
//! serde_yaml runs, so what this walk sees nested or quoted is what
//! serde_yaml will see. Pulling events one by one lets [`super::check`] stop
//! at the first excess instead of paying for the whole text.
//!
//! This is the one module of dcn with `unsafe` code: libyaml's API is a C
//! API in Rust clothing. Its use follows serde_yaml's own wrapper
//! (`serde_yaml::libyaml::parser`).

#![allow(unsafe_code)]

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use unsafe_libyaml as unsafe_sys;

/// What [`super::check`] needs to know of an event.
pub enum Kind {
    /// A sequence or mapping starts.
    Start {
        mapping: bool,
    },
    /// A sequence or mapping ends.
    End,
    /// A scalar, with its value.
    Scalar(Vec<u8>),
    Alias,
    /// Stream and document boundaries.
    Other,
}

/// An event and where it starts (1-based).
pub struct Event {
    pub kind: Kind,
    pub line: usize,
    pub column: usize,
}

/// A libyaml parser reading a borrowed text.
pub struct Parser<'input> {
    // Boxed: libyaml keeps a pointer to the parser itself (the string
    // reader's data), so it must not move once the input is set.
    sys: Box<MaybeUninit<unsafe_sys::yaml_parser_t>>,
    done: bool,
    input: PhantomData<&'input str>,
}

impl<'input> Parser<'input> {
    pub fn new(input: &'input str) -> Parser<'input> {
        let mut sys = Box::new(MaybeUninit::<unsafe_sys::yaml_parser_t>::uninit());
        let parser = sys.as_mut_ptr();
        // SAFETY: `parser` points to memory owned by the box, valid for a
        // `yaml_parser_t`; yaml_parser_initialize zeroes and initialises it
        // (it aborts rather than fail on allocation failure, so its result
        // is always OK). The input pointer stays valid for 'input, which
        // this struct borrows, and the parser is deleted in `drop`.
        let ok = unsafe {
            let ok = unsafe_sys::yaml_parser_initialize(parser).ok;
            if ok {
                unsafe_sys::yaml_parser_set_encoding(parser, unsafe_sys::YAML_UTF8_ENCODING);
                unsafe_sys::yaml_parser_set_input_string(
                    parser,
                    input.as_ptr(),
                    input.len() as u64,
                );
            }
            ok
        };
        assert!(ok, "libyaml could not initialise a parser");
        Parser {
            sys,
            done: false,
            input: PhantomData,
        }
    }

    /// The next event; `None` after the stream ends or at a syntax error
    /// (which the serde_yaml parse that follows reports).
    pub fn next(&mut self) -> Option<Event> {
        if self.done {
            return None;
        }
        let parser = self.sys.as_mut_ptr();
        let mut event = MaybeUninit::<unsafe_sys::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised in `new` and has not failed
        // or ended (`done`), as libyaml requires; on success
        // yaml_parser_parse initialises `event`, whose scalar value (a
        // libyaml allocation of `length` bytes) is copied out before
        // yaml_event_delete frees it.
        unsafe {
            if unsafe_sys::yaml_parser_parse(parser, event.as_mut_ptr()).fail {
                self.done = true;
                return None;
            }
            let event = event.assume_init_mut();
            let kind = match event.type_ {
                unsafe_sys::YAML_SEQUENCE_START_EVENT => Kind::Start { mapping: false },
                unsafe_sys::YAML_MAPPING_START_EVENT => Kind::Start { mapping: true },
                unsafe_sys::YAML_SEQUENCE_END_EVENT | unsafe_sys::YAML_MAPPING_END_EVENT => {
                    Kind::End
                }
                unsafe_sys::YAML_SCALAR_EVENT => {
                    let s = event.data.scalar;
                    Kind::Scalar(if s.value.is_null() || s.length == 0 {
                        Vec::new()
                    } else {
                        std::slice::from_raw_parts(s.value, s.length as usize).to_vec()
                    })
                }
                unsafe_sys::YAML_ALIAS_EVENT => Kind::Alias,
                unsafe_sys::YAML_STREAM_END_EVENT => {
                    self.done = true;
                    Kind::Other
                }
                _ => Kind::Other,
            };
            let mark = event.start_mark;
            unsafe_sys::yaml_event_delete(event);
            Some(Event {
                kind,
                line: mark.line as usize + 1,
                column: mark.column as usize + 1,
            })
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: the parser was initialised in `new` and is deleted once.
        unsafe { unsafe_sys::yaml_parser_delete(self.sys.as_mut_ptr()) }
    }
}
