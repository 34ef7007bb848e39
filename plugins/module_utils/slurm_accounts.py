"""Slurm accounts, users and QoS: the wanted state checked, the current state read from sacctmgr's
tables, and the sacctmgr commands that take one to the other (only the difference).

Rules (the role README says them to users):
- Only the fields an entry declares are managed; a field left out keeps whatever it has. A TRES
  mapping declared is the whole limit (a TRES in the database and not in the mapping is reset to
  -1, no limit); -1 or null as a value means no limit.
- A user declared lists all of its associations on the cluster: one in an account not listed is
  removed. Accounts, users and QoS not declared are left alone unless `prune`; `state: absent`
  removes one. root (account and user) and the QoS normal are never removed.
- Removing an account (with the accounts below it), a user association or a QoS with active jobs
  is for the caller to refuse or allow: each removal says which accounts, user and QoS it touches.

Stdlib only, Python 3.8 syntax: Ansible ships this file with the slurm_accounts module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ansible.module_utils.sacctmgr import TITLES, duration_seconds, parse_table, parse_tres

PROTECTED = {"qos": {"normal"}, "account": {"root"}, "user": {"root"}}
_NAME = re.compile(r"^[a-z0-9_][a-z0-9_.-]{0,63}$")
_TRES_NAME = re.compile(r"^[a-z]+(/[A-Za-z0-9_:.-]+)?$")
PREEMPT_MODES = ("cluster", "cancel", "requeue", "suspend", "gang", "off")


@dataclass(frozen=True)
class Field:
    """A managed field: how sacctmgr shows it (format=), how it is set (set X=) and its kind."""

    show: str
    set: str
    kind: str  # int, share, float, text, lower (text sacctmgr lower-cases), list, mode, tres, duration


QOS_FIELDS = {
    "description": Field("Description", "Description", "lower"),
    "priority": Field("Priority", "Priority", "int"),
    "preempt": Field("Preempt", "Preempt", "list"),
    "preempt_mode": Field("PreemptMode", "PreemptMode", "mode"),
    "usage_factor": Field("UsageFactor", "UsageFactor", "float"),
    "grp_tres": Field("GrpTRES", "GrpTRES", "tres"),
    "max_tres_per_job": Field("MaxTRES", "MaxTRESPerJob", "tres"),
    "max_tres_per_user": Field("MaxTRESPerUser", "MaxTRESPerUser", "tres"),
    "max_wall": Field("MaxWall", "MaxWall", "duration"),
}
# Limits of an association (an account's own, or a user's in one account).
ASSOC_FIELDS = {
    "fairshare": Field("Share", "Fairshare", "share"),
    "grp_tres": Field("GrpTRES", "GrpTRES", "tres"),
    "max_tres_per_job": Field("MaxTRES", "MaxTRES", "tres"),
    "max_wall": Field("MaxWall", "MaxWall", "duration"),
    "qos": Field("QOS", "QOS", "list"),
    "default_qos": Field("DefaultQOS", "DefaultQOS", "text"),
}
# sacctmgr stores descriptions and organizations in lower case: they compare without case.
ACCOUNT_RECORD_FIELDS = {
    "description": Field("Description", "Description", "lower"),
    "organization": Field("Organization", "Organization", "lower"),
}
ACCOUNT_KEYS = {"name", "state", "parent", *ACCOUNT_RECORD_FIELDS, *ASSOC_FIELDS}
USER_KEYS = {"name", "state", "accounts", "default_account", *ASSOC_FIELDS}
QOS_KEYS = {"name", "state", *QOS_FIELDS}

# The sacctmgr commands that read the current state: (what, format fields).
SHOW_QOS = ["Name", *[f.show for f in QOS_FIELDS.values()]]
SHOW_ACCOUNTS = ["Account", "Description", "Organization"]
SHOW_ASSOCS = ["Account", "User", "Partition", "ParentName", *[f.show for f in ASSOC_FIELDS.values()]]
SHOW_USERS = ["User", "DefaultAccount"]
SHOW_TRES = ["Type", "Name"]


def show_commands(cluster: str) -> dict[str, list[str]]:
    """sacctmgr arguments (after `sacctmgr --parsable2`) that print each table the plan reads."""
    return {
        "qos": ["show", "qos", "format=" + ",".join(SHOW_QOS)],
        "accounts": ["show", "account", "format=" + ",".join(SHOW_ACCOUNTS)],
        "assocs": ["show", "assoc", "where", "cluster=" + cluster, "format=" + ",".join(SHOW_ASSOCS)],
        "users": ["show", "user", "format=" + ",".join(SHOW_USERS)],
        "tres": ["show", "tres", "format=" + ",".join(SHOW_TRES)],
    }


class SpecError(ValueError):
    """The wanted state is wrong: says which entry, which field and what was expected."""


@dataclass
class State:
    """What the accounting database holds for one cluster (the rows of show_commands' tables)."""

    qos: dict[str, dict[str, str]]
    accounts: dict[str, dict[str, str]]  # account record (global)
    account_assocs: dict[str, dict[str, str]]  # account -> its own association on the cluster
    user_assocs: dict[tuple[str, str], dict[str, str]]  # (user, account) -> association
    users: dict[str, dict[str, str]]
    tres: set[str]


def read_state(outputs: dict[str, str]) -> State:
    """State from the outputs of show_commands (keyed the same); ParseError names the table."""
    fields = {"qos": SHOW_QOS, "accounts": SHOW_ACCOUNTS, "assocs": SHOW_ASSOCS, "users": SHOW_USERS, "tres": SHOW_TRES}
    rows = {key: parse_table(outputs[key], fields[key], source="sacctmgr show " + key) for key in fields}
    # Partition-specific associations are not managed (left alone, never matched).
    assocs = [row for row in rows["assocs"] if row["Partition"] == ""]
    return State(
        qos={row["Name"]: row for row in rows["qos"]},
        accounts={row["Account"]: row for row in rows["accounts"]},
        account_assocs={row["Account"]: row for row in assocs if row["User"] == ""},
        user_assocs={(row["User"], row["Account"]): row for row in assocs if row["User"] != ""},
        users={row["User"]: row for row in rows["users"]},
        tres={row["Type"] + ("/" + row["Name"] if row["Name"] else "") for row in rows["tres"]},
    )


# --- the wanted state ------------------------------------------------------------------------------


def _entries(items, what: str, keys: set[str]) -> list[dict]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise SpecError(f"{what}: expected a list of mappings, got {type(items).__name__}")
    seen: set[str] = set()
    out = []
    for index, item in enumerate(items):
        where = f"{what}[{index}]"
        if not isinstance(item, dict):
            raise SpecError(f"{where}: expected a mapping with a name, got {item!r:.80}")
        name = item.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise SpecError(
                f"{where}.name: expected lower-case letters, digits, '_', '.' or '-' (Slurm stores names"
                f" in lower case), got {name!r}"
            )
        where = f"{what}[{index}] ({name})"
        unknown = sorted(set(item) - keys)
        if unknown:
            raise SpecError(f"{where}: unknown fields {unknown}; expected some of {sorted(keys)}")
        if name in seen:
            raise SpecError(f"{where}: declared twice")
        seen.add(name)
        state = item.get("state", "present")
        if state not in ("present", "absent"):
            raise SpecError(f"{where}.state: expected present or absent, got {state!r}")
        out.append({**item, "state": state, "_where": where})
    return out


def _check_value(where: str, key: str, kind: str, value) -> None:
    bad = None
    if value is None:
        return
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < -1:
            bad = "a whole number (-1: no limit)"
    elif kind == "share":
        if not (value == "parent" or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)):
            bad = "a whole number of shares or 'parent'"
    elif kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            bad = "a number of 0 or more"
    elif kind in ("text", "lower"):
        if not isinstance(value, str) or not value or "|" in value or "\n" in value:
            bad = "a non-empty one-line text without '|'"
    elif kind == "list":
        if not isinstance(value, list) or not all(isinstance(i, str) and _NAME.match(i) for i in value):
            bad = "a list of names"
    elif kind == "mode":
        if not isinstance(value, str) or value.lower() not in PREEMPT_MODES:
            bad = f"one of {', '.join(PREEMPT_MODES)}"
    elif kind == "tres":
        ok = isinstance(value, dict) and all(
            isinstance(k, str)
            and _TRES_NAME.match(k)
            and (v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= -1))
            for k, v in value.items()
        )
        if not ok:
            bad = "a mapping of TRES name (cpu, mem, node, gres/gpu, ...) to a count (-1 or null: no limit)"
    elif kind == "duration":
        try:
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise ValueError(value)
            duration_seconds(str(value))
        except ValueError:
            bad = "a Slurm duration (minutes, hours:minutes:seconds, days-hours:minutes:seconds; -1: no limit)"
    if bad:
        raise SpecError(f"{where}.{key}: expected {bad}, got {value!r:.80}")


def validate(qos, accounts, users) -> dict[str, list[dict]]:
    """The three lists checked field by field (SpecError names the entry and field); each entry gets
    its 'state' and, for users, 'default_account'."""
    spec = {
        "qos": _entries(qos, "qos", QOS_KEYS),
        "accounts": _entries(accounts, "accounts", ACCOUNT_KEYS),
        "users": _entries(users, "users", USER_KEYS),
    }
    for entry in spec["qos"]:
        for key, fld in QOS_FIELDS.items():
            _check_value(entry["_where"], key, fld.kind, entry.get(key))
    for entry in spec["accounts"]:
        fields = {**ACCOUNT_RECORD_FIELDS, **ASSOC_FIELDS, "parent": Field("ParentName", "Parent", "text")}
        for key, fld in fields.items():
            _check_value(entry["_where"], key, fld.kind, entry.get(key))
        if entry.get("parent") == entry["name"]:
            raise SpecError(f"{entry['_where']}.parent: an account cannot be its own parent")
    for entry in spec["users"]:
        where = entry["_where"]
        for key, fld in ASSOC_FIELDS.items():
            _check_value(where, key, fld.kind, entry.get(key))
        if entry["state"] == "absent":
            continue
        names = entry.get("accounts")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and _NAME.match(n) for n in names):
            raise SpecError(f"{where}.accounts: expected a non-empty list of account names, got {names!r:.80}")
        default = entry.setdefault("default_account", names[0])
        if default not in names:
            raise SpecError(f"{where}.default_account: {default!r} is not one of its accounts {names}")
    return spec


# --- comparing and rendering values ----------------------------------------------------------------


def _tres_limits(mapping: dict) -> dict[str, int]:
    return {k: int(v) for k, v in mapping.items() if v is not None and int(v) != -1}


def same(kind: str, wanted, current: str) -> bool:
    """Whether a declared value equals sacctmgr's printed one."""
    if kind == "tres":
        return _tres_limits(wanted or {}) == _tres_limits(parse_tres(current))
    if kind == "duration":
        return duration_seconds(str(-1 if wanted is None else wanted)) == duration_seconds(current)
    if kind == "list":
        return sorted(set(wanted or [])) == sorted(set(filter(None, current.split(","))))
    if kind == "int":
        return (current == "" and wanted in (None, -1)) or (
            current != "" and wanted is not None and str(wanted) == current
        )
    if kind == "float":
        return current != "" and abs(float(current) - float(wanted)) < 1e-6
    if kind in ("share", "mode", "lower"):
        return str(wanted).lower() == current.lower()
    return str(wanted) == current


def render(kind: str, wanted, current: str) -> str:
    """The value of `set Field=<this>` that makes the field equal `wanted`."""
    if kind == "tres":
        limits = {k: (-1 if v is None else int(v)) for k, v in (wanted or {}).items()}
        for name in parse_tres(current):
            limits.setdefault(name, -1)  # a TRES the declared mapping leaves out: no limit
        return ",".join(f"{k}={v}" for k, v in sorted(limits.items()))
    if kind == "list":
        # sacctmgr reads '' (two quote characters) as "none": no shell here, they are literal.
        return ",".join(sorted(set(wanted))) if wanted else "''"
    if kind in ("int", "duration") and wanted is None:
        return "-1"
    return str(wanted)


def _shown(kind: str, value) -> str:
    if kind == "tres":
        return ",".join(f"{k}={v}" for k, v in sorted(_tres_limits(value or {}).items())) or "(none)"
    if kind == "list":
        return ",".join(sorted(set(value or []))) or "(none)"
    return "(none)" if value is None or value == "" else str(value)


# --- the plan ------------------------------------------------------------------------------------


@dataclass
class Removal:
    """What a removal takes away, to find the jobs it would leave without an association or QoS."""

    accounts: tuple = ()
    user: str = ""
    qos: str = ""

    def matches(self, job: dict[str, str]) -> bool:
        if self.qos:
            return job["QOS"] == self.qos
        if self.user and job["USER"] != self.user:
            return False
        return not self.accounts or job["ACCOUNT"] in self.accounts


@dataclass
class Change:
    """One sacctmgr command (arguments after `sacctmgr --immediate`) and what it changes."""

    label: str  # "qos low", "account ml", "user alice", "association alice@ml"
    args: list[str]
    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)
    removal: Removal | None = None

    @property
    def text(self) -> str:
        verb = self.args[0]
        if verb == "delete":
            return f"remove {self.label}"
        parts = [
            f"{k}: {self.before.get(k, '(none)')} -> {v}" if verb == "modify" else f"{k}={v}"
            for k, v in self.after.items()
        ]
        return f"{'add' if verb == 'add' else 'change'} {self.label}" + (": " + ", ".join(parts) if parts else "")


def _diff_fields(entry: dict, fields: dict[str, Field], current: dict[str, str]):
    """(set arguments, before, after) of the declared fields that differ from `current`."""
    sets, before, after = [], {}, {}
    for key, fld in fields.items():
        if key not in entry or same(fld.kind, entry[key], current[fld.show]):
            continue
        sets.append(f"{fld.set}={render(fld.kind, entry[key], current[fld.show])}")
        before[key] = current[fld.show] or "(none)"
        after[key] = _shown(fld.kind, entry[key])
    return sets, before, after


def _add_fields(entry: dict, fields: dict[str, Field], skip=()) -> tuple[list[str], dict[str, str]]:
    sets, after = [], {}
    for key, fld in fields.items():
        if key in entry and key not in skip:
            sets.append(f"{fld.set}={render(fld.kind, entry[key], '')}")
            after[key] = _shown(fld.kind, entry[key])
    return sets, after


def _descendants(state: State, name: str) -> list[str]:
    """`name` and every account below it on the cluster, deepest first."""
    children: dict[str, list[str]] = {}
    for account, row in state.account_assocs.items():
        children.setdefault(row["ParentName"], []).append(account)
    order: list[str] = []

    def walk(account: str) -> None:
        for child in sorted(children.get(account, [])):
            walk(child)
        order.append(account)

    walk(name)
    return order


def _check_references(spec: dict[str, list[dict]], state: State) -> None:
    gone = {kind: {e["name"] for e in spec[kind] if e["state"] == "absent"} for kind in ("qos", "accounts", "users")}
    qos_known = ({e["name"] for e in spec["qos"]} | set(state.qos)) - gone["qos"]
    accounts_known = ({e["name"] for e in spec["accounts"]} | set(state.account_assocs)) - gone["accounts"]
    for entry in spec["qos"]:
        for name in entry.get("preempt") or []:
            if name not in qos_known or name == entry["name"]:
                raise SpecError(f"{entry['_where']}.preempt: {name!r} is not another QoS declared or in the database")
    for kind in ("accounts", "users"):
        for entry in spec[kind]:
            if entry["state"] == "absent":
                continue
            for name in (entry.get("qos") or []) + ([entry["default_qos"]] if entry.get("default_qos") else []):
                if name not in qos_known:
                    raise SpecError(f"{entry['_where']}.qos: {name!r} is not a QoS declared or in the database")
            if entry.get("default_qos") and "qos" in entry and entry["default_qos"] not in entry["qos"]:
                raise SpecError(f"{entry['_where']}.default_qos: {entry['default_qos']!r} is not in its qos list")
            names = entry.get("accounts", []) + ([entry["parent"]] if entry.get("parent") else [])
            for name in names:
                if name not in accounts_known:
                    raise SpecError(f"{entry['_where']}: account {name!r} is not declared or on the cluster")
            for key in ("grp_tres", "max_tres_per_job"):
                _check_tres(entry, key, state)
    for entry in spec["qos"]:
        for key in ("grp_tres", "max_tres_per_job", "max_tres_per_user"):
            _check_tres(entry, key, state)


def _check_tres(entry: dict, key: str, state: State) -> None:
    for name in entry.get(key) or {}:
        if name not in state.tres:
            raise SpecError(
                f"{entry['_where']}.{key}: {name!r} is not a TRES the accounting database tracks"
                f" ({', '.join(sorted(state.tres))}); a gres needs AccountingStorageTRES in slurm.conf"
            )


def _account_order(entries: list[dict]) -> list[dict]:
    """Declared accounts, each after the declared account it names as parent."""
    by_name = {e["name"]: e for e in entries}
    done: list[dict] = []
    placed: set[str] = set()

    def place(entry: dict, path: tuple) -> None:
        if entry["name"] in placed:
            return
        if entry["name"] in path:
            raise SpecError(
                f"{entry['_where']}.parent: the parents form a loop ({' -> '.join((*path, entry['name']))})"
            )
        parent = by_name.get(entry.get("parent", "root"))
        if parent is not None and parent["state"] == "present":
            place(parent, (*path, entry["name"]))
        placed.add(entry["name"])
        done.append(entry)

    for entry in entries:
        place(entry, ())
    return done


def plan(qos, accounts, users, state: State, cluster: str, prune: bool = False) -> list[Change]:
    """The sacctmgr commands, in the order they must run, that take `state` to the declared lists."""
    spec = validate(qos, accounts, users)
    _check_references(spec, state)
    adds: list[Change] = []
    later: list[Change] = []
    removals: list[Change] = []
    where_cluster = "Cluster=" + cluster

    # QoS: added without Preempt (it may name a QoS added after it), then set.
    for entry in spec["qos"]:
        name = entry["name"]
        if entry["state"] == "absent":
            continue
        if name not in state.qos:
            sets, after = _add_fields(entry, QOS_FIELDS, skip=("preempt",))
            adds.append(Change(f"qos {name}", ["add", "qos", name, *sets], after=after))
            if entry.get("preempt"):
                value = render("list", entry["preempt"], "")
                later.append(
                    Change(
                        f"qos {name}",
                        ["modify", "qos", "where", "Name=" + name, "set", "Preempt=" + value],
                        before={"preempt": "(none)"},
                        after={"preempt": _shown("list", entry["preempt"])},
                    )
                )
            continue
        sets, before, after = _diff_fields(entry, QOS_FIELDS, state.qos[name])
        if sets:
            later.append(Change(f"qos {name}", ["modify", "qos", "where", "Name=" + name, "set", *sets], before, after))

    # Accounts, parents first.
    account_changes: list[Change] = []
    for entry in _account_order([e for e in spec["accounts"] if e["state"] == "present"]):
        name = entry["name"]
        if name not in state.account_assocs:
            sets, after = _add_fields(entry, {**ACCOUNT_RECORD_FIELDS, **ASSOC_FIELDS})
            parent = entry.get("parent", "root")
            adds.append(
                Change(
                    f"account {name}",
                    ["add", "account", name, where_cluster, "Parent=" + parent, *sets],
                    after={"parent": parent, **after},
                )
            )
            continue
        record = state.accounts.get(name, {"Description": "", "Organization": ""})
        sets, before, after = _diff_fields(entry, ACCOUNT_RECORD_FIELDS, record)
        if sets:
            account_changes.append(
                Change(f"account {name}", ["modify", "account", "where", "Name=" + name, "set", *sets], before, after)
            )
        assoc = state.account_assocs[name]
        sets, before, after = _diff_fields(entry, ASSOC_FIELDS, assoc)
        if "parent" in entry and entry["parent"] != assoc["ParentName"]:
            sets.append("Parent=" + entry["parent"])
            before["parent"], after["parent"] = assoc["ParentName"], entry["parent"]
        if sets:
            account_changes.append(
                Change(
                    f"account {name}",
                    ["modify", "account", "where", "Name=" + name, where_cluster, "set", *sets],
                    before,
                    after,
                )
            )
    later = account_changes + later

    # Users: their associations, then their default account, then the associations they lost.
    user_changes: list[Change] = []
    for entry in spec["users"]:
        name = entry["name"]
        if entry["state"] == "absent":
            continue
        have = {account for (user, account) in state.user_assocs if user == name}
        missing = [a for a in entry["accounts"] if a not in have]
        assoc_sets, assoc_after = _add_fields(entry, ASSOC_FIELDS)
        if missing:
            args = ["add", "user", name, "Account=" + ",".join(missing), where_cluster, *assoc_sets]
            after = {"accounts": ",".join(missing), **assoc_after}
            if name not in state.users:
                args.append("DefaultAccount=" + entry["default_account"])
                after["default_account"] = entry["default_account"]
            label = f"user {name}" if name not in state.users else f"association {name}@{','.join(missing)}"
            adds.append(Change(label, args, after=after))
        for account in entry["accounts"]:
            if account in have:
                sets, before, after = _diff_fields(entry, ASSOC_FIELDS, state.user_assocs[(name, account)])
                if sets:
                    user_changes.append(
                        Change(
                            f"association {name}@{account}",
                            [
                                "modify",
                                "user",
                                "where",
                                "Name=" + name,
                                "Account=" + account,
                                where_cluster,
                                "set",
                                *sets,
                            ],
                            before,
                            after,
                        )
                    )
        current_default = state.users.get(name, {}).get("DefaultAccount", "")
        if name in state.users and current_default != entry["default_account"]:
            user_changes.append(
                Change(
                    f"user {name}",
                    ["modify", "user", "where", "Name=" + name, "set", "DefaultAccount=" + entry["default_account"]],
                    {"default_account": current_default or "(none)"},
                    {"default_account": entry["default_account"]},
                )
            )
        for account in sorted(have - set(entry["accounts"])):
            removals.append(
                Change(
                    f"association {name}@{account}",
                    ["delete", "user", "where", "Name=" + name, "Account=" + account, where_cluster],
                    before={"association": "present"},
                    removal=Removal(accounts=(account,), user=name),
                )
            )
    later = later + user_changes

    # Removals: users, then accounts (deepest first), then QoS.
    declared = {kind: {e["name"] for e in spec[kind] if e["state"] == "present"} for kind in spec}
    absent = {kind: {e["name"] for e in spec[kind] if e["state"] == "absent"} for kind in spec}
    users_on_cluster = sorted({user for (user, _) in state.user_assocs})
    for name in users_on_cluster:
        if name in PROTECTED["user"] or name in declared["users"]:
            continue
        if name in absent["users"] or prune:
            accounts_of = tuple(sorted(a for (u, a) in state.user_assocs if u == name))
            removals.append(
                Change(
                    f"user {name}",
                    ["delete", "user", "where", "Name=" + name, where_cluster],
                    before={"associations": ",".join(accounts_of)},
                    removal=Removal(accounts=accounts_of, user=name),
                )
            )
    doomed = [
        name
        for name in state.account_assocs
        if name not in PROTECTED["account"]
        and name not in declared["accounts"]
        and (name in absent["accounts"] or prune)
    ]
    removed: set[str] = set()
    for name in sorted(doomed, key=lambda n: -len(_ancestors(state, n))):
        if name in removed:
            continue
        subtree = _descendants(state, name)
        kept = [a for a in subtree if a in declared["accounts"]]
        if kept:
            raise SpecError(
                f"accounts: removing {name} would remove {', '.join(kept)} below it, which are declared present"
            )
        removed.update(subtree)
        removals.append(
            Change(
                f"account {name}",
                ["delete", "account", "where", "Name=" + name, where_cluster],
                before={"accounts": ",".join(subtree)},
                removal=Removal(accounts=tuple(subtree)),
            )
        )
    for name in sorted(state.qos):
        if name in PROTECTED["qos"] or name in declared["qos"]:
            continue
        if name in absent["qos"] or prune:
            removals.append(
                Change(
                    f"qos {name}",
                    ["delete", "qos", "where", "Name=" + name],
                    before={"qos": "present"},
                    removal=Removal(qos=name),
                )
            )
    return adds + later + removals


def _ancestors(state: State, name: str) -> list[str]:
    chain, seen = [], {name}
    parent = state.account_assocs.get(name, {}).get("ParentName", "")
    while parent and parent not in seen:
        chain.append(parent)
        seen.add(parent)
        parent = state.account_assocs.get(parent, {}).get("ParentName", "")
    return chain


def blocking_jobs(changes: list[Change], jobs: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    """label of each removal -> the active jobs (squeue rows) it would take the association or QoS of."""
    found = {}
    for change in changes:
        if change.removal is None:
            continue
        hit = [job for job in jobs if change.removal.matches(job)]
        if hit:
            found[change.label] = hit
    return found


def diff_text(changes: list[Change]) -> dict[str, str]:
    """Ansible's --diff before/after: one line per changed field of each changed entity."""
    before, after = [], []
    for change in changes:
        before += [f"{change.label}: {k}={v}" for k, v in change.before.items()]
        after += [f"{change.label}: {k}={v}" for k, v in change.after.items()]
    return {"before": "\n".join(before) + ("\n" if before else ""), "after": "\n".join(after) + ("\n" if after else "")}


__all__ = [
    "TITLES",
    "Change",
    "SpecError",
    "State",
    "blocking_jobs",
    "diff_text",
    "plan",
    "read_state",
    "show_commands",
]
