"""The I/O shell's node side: the node bus (pub/sub between nodes, node liveness).
"""
