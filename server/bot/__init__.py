"""Computer players on a ladder of levels, playing through the public protocol only.

Layers (imports point down)::

    server.bot.__main__   python -m server.bot: bot accounts playing games from the CLI
    server.bot.player     asyncio: one bot on one client connection (server.client)
    server.bot.strategy   pure: a decision per game snapshot and level (random, the ladder)
    server.bot.ladder     pure: the ladder's rungs (search, noise, measured rate), aliases
    server.bot.expert     pure: the evaluator's plays (noise, search) and cube decisions
    server.bot.cube       pure: the cube model (money and match)
    server.bot.neural     pure: the neural evaluator and its encoding
    server.bot.evaluation pure: positions as the computer sees them, the 21 rolls

The server's "play the computer" (``server.lobby.computer``) runs ``server.bot.player`` bots that
connect to the node like any client.
"""
