"""What vkir keeps between processes, under one root directory (`root`): compiled kernels
(`compile`); the driver's pipeline caches and tuned configurations live under the same root."""
