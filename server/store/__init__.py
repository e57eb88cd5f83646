"""The I/O shell's persistence: the modules that talk to Redis for games, accounts and the
matchmaking pool, and their Lua scripts.
"""
