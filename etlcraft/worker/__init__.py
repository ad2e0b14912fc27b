"""The worker agent, `etl-craft worker --pool P`: it serves a QUEUE pool of a PostgreSQL Engine DB from any host.

It registers (register_worker), claims attempts of its pool in batches (claim_attempt), runs each as a task process
of its own (etlcraft.supervisor.local), wakes on NOTIFY etl_craft_queue, heartbeats (heartbeat_worker, which also
says which attempts were cancelled, and reap_workers) and drains on SIGTERM (drain_worker, stop_worker). Every status
change is one of the Engine DB's functions; the worker decides only when to call them.
"""
