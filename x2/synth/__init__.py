"""Synthesis: skills, the motion layer and the executor that turn a task DAG into demonstrations."""
