"""MSETEX from Python with redis-py (any version: execute_command).
Run: python3 examples/redis_py.py redis://127.0.0.1:6379/
"""

import sys

import redis

r = redis.Redis.from_url(sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6379/")

# A session and its CSRF token, both for 30 minutes.
r.execute_command("MSETEX", 1800, "session:8f2a", '{"user":42}', "csrf:8f2a", "c2e1b7")

# A lock over two resources, all or none, for 10 seconds.
acquired = r.execute_command(
    "MSETEX", "NX", "PX", 10_000, "lock:{order:7}:stock", "3f2a", "lock:{order:7}:payment", "3f2a"
)

ttl = r.ttl("csrf:8f2a")
print(f"session stored for {ttl} s; lock acquired: {str(acquired == 1).lower()}")
