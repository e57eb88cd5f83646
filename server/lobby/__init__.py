"""The I/O shell's game side: lobby routing between sockets and tables, the table driver (timers,
Redis, delivery around the pure table machine), table ownership (leases, takeover, drain),
matchmaking and the computer player.
"""
