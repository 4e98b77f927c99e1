"""Policies as services: openpi's websocket protocol, the services x2 ships, and the client the evaluator uses."""
