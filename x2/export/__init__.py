"""Exporters: LeRobot, zarr (diffusion policy) and robomimic / Isaac Lab HDF5, from finished episodes."""
