"""Tools around the library: the command line (`cli`), the demo, `vkir doctor`, shader validation
for CI (`validate`, `validate_jobs`), the vector-access report and the fuzzing campaign (`fuzz`)."""
