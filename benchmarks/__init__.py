"""The vkir benchmark suite (run with `vkir bench`); see suite.py."""
