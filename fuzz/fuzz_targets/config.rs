#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tephra_snapshot::fuzzing::config(data));
