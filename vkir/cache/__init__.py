"""What vkir keeps between processes, under one root directory (`root`): compiled kernels
(`compile`); the driver's pipeline caches, tuned configurations and native-loop libraries live
under the same root. Every file is read and written through vkir.store (private folders, sealed
entries, the size cap), so nothing read back is trusted."""
