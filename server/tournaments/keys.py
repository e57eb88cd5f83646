"""Redis key names of tournaments and runner keys (beside ``server/store/keys.py``'s).

Everything about one tournament shares the hash tag ``{tn:<id>}`` (its record, players, tables,
bracket state and the bracket's lease), so each script touches one slot. Runner keys live in
one hash; the tournament indexes are one key each.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TournamentKeys:
    prefix: str

    @property
    def runner_keys(self) -> str:
        """Hash: ``name:<name>`` -> key id, ``id:<key id>`` -> JSON {name, digest, created_at},
        ``owner:<key id>`` -> name (every key ever issued)."""
        return f"{self.prefix}runner-keys"

    def tournament(self, tid: str) -> str:
        """Hash: id, name, visibility, prizes (JSON), format (JSON), owner (the runner's name),
        runner (the id of the key that created it), status, created_at, seq, bracket ("1"
        when server-run), podium (JSON, once awarded), registration ("open" | "closed",
        absent: closed), cap (players a self-join may reach), deadline (Unix s, "" none)."""
        return f"{self.prefix}{{tn:{tid}}}:tournament"

    def players(self, tid: str) -> str:
        """Zset: player -> registration number."""
        return f"{self.prefix}{{tn:{tid}}}:players"

    def tables(self, tid: str) -> str:
        """List of the tournament's table ids, in the order they were opened."""
        return f"{self.prefix}{{tn:{tid}}}:tables"

    def bracket(self, tid: str) -> str:
        """String: the bracket state (JSON, ``Bracket.to_dict`` plus notes of the driver)."""
        return f"{self.prefix}{{tn:{tid}}}:bracket"

    def removed(self, tid: str) -> str:
        """String, expiring: the owner of an open tournament its runner cancelled (the record
        is gone; a repeated cancel by the same runner is answered the same)."""
        return f"{self.prefix}{{tn:{tid}}}:removed"

    def lease(self, tid: str) -> str:
        """String: the node running the bracket now (expiring)."""
        return f"{self.prefix}{{tn:{tid}}}:lease"

    @property
    def public(self) -> str:
        """Zset: public tournament id -> created_at."""
        return f"{self.prefix}tournaments:public"

    def of_runner(self, name: str) -> str:
        """Zset: id of every tournament the runner ``name`` owns (public and private) ->
        created_at."""
        return f"{self.prefix}tournaments:runner:{name}"

    def of_player(self, player: str) -> str:
        """Zset: id of every tournament ``player`` registered in (by themselves or by its
        runner) -> when; read back against each tournament's own players."""
        return f"{self.prefix}tournaments:player:{player}"

    @property
    def running(self) -> str:
        """Set: ids of brackets the server runs (removed when the podium is awarded, or when
        a cancelled bracket's tables are all closed)."""
        return f"{self.prefix}tournaments:running"
