"""The block execution model: lanes, storage and shared memory of kernels that use tiles."""
