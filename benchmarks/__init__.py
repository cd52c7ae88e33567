"""Speed and memory measurements. Not part of the test suite: run `make bench`."""
