"""Objects from mesh files: a user's OBJ, STL, GLB or PLY read, checked, decomposed into convex pieces, weighed
and written as a self-contained MJCF fragment (meshes inline), with no simulator: trimesh and CoACD only.

`source` reads and checks the file (one SpecError line for each thing a lab's file gets wrong), `pieces` makes the
collision pieces and the decimated visual mesh, `inertia` the mass properties, `fragment` the MJCF text and the
asset YAML; `build` runs them in order. x2.sim.mujoco.mesh_object compiles and drop-tests the result before
`x2 objects add` writes it (x2.envspec.mesh_objects).
"""
