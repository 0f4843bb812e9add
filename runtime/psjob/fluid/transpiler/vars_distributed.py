"""The overview of where every distributed variable lives (`program._parameters_on_pservers`).

The transpiler records, for each block of each parameter and each optimizer
accumulator held by a pserver: the origin variable, the slice variable (its
name and shape on the pserver), whether it is a slice of the origin, the
block id, the element offset of the slice in the origin, the endpoint and a
kind (`vtype`):

    "Param"           a parameter (or one block of it)
    "Optimizer"       an optimizer accumulator (moments, beta pows, ...)
    "RemotePrefetch"  a parameter the trainer never receives whole; its rows
                      are prefetched by id

Checkpoint code reads it to know what to fetch from which pserver and how to
reassemble it (by block id and offset), and what a pserver must load for its
own slices. It is plain data: `to_dict()` / `from_dict()` round-trip it so a
process started from a serialized plan has it too.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

VTYPES = ("Param", "Optimizer", "RemotePrefetch")


@dataclass
class VarStruct:
    """A variable's declaration without its block: name, shape, dtype, type, lod_level, persistable."""

    name: str
    shape: tuple
    dtype: str
    type: str = "LOD_TENSOR"
    lod_level: int = 0
    persistable: bool = True

    @classmethod
    def of(cls, var) -> VarStruct:
        if isinstance(var, VarStruct):
            return var
        vtype = getattr(var, "type", "LOD_TENSOR")
        return cls(var.name, tuple(int(d) for d in var.shape), str(var.dtype),
                   getattr(vtype, "value", str(vtype)), int(getattr(var, "lod_level", 0)),
                   bool(getattr(var, "persistable", True)))

    def to_dict(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "type": self.type,
                "lod_level": self.lod_level, "persistable": self.persistable}

    @classmethod
    def from_dict(cls, d) -> VarStruct:
        return cls(d["name"], tuple(d["shape"]), d["dtype"], d.get("type", "LOD_TENSOR"),
                   int(d.get("lod_level", 0)), bool(d.get("persistable", True)))


@dataclass
class VarDistributed:
    """One piece of a distributed variable: origin, slice, placement and kind."""

    origin: VarStruct
    slice: VarStruct
    is_slice: bool = False
    block_id: int = 0
    offset: int = 0          # element offset of the slice inside the origin
    vtype: str = "Param"
    endpoint: str = ""

    def __post_init__(self):
        if self.vtype not in VTYPES:
            raise ValueError(f"vtype must be one of {VTYPES}, got {self.vtype!r}")

    def __str__(self):
        return (f"{self.origin.name}{list(self.origin.shape)} -> {self.slice.name}{list(self.slice.shape)} "
                f"slice={self.is_slice} block={self.block_id} offset={self.offset} "
                f"vtype={self.vtype} endpoint={self.endpoint}")

    def to_dict(self) -> dict:
        return {"origin": self.origin.to_dict(), "slice": self.slice.to_dict(), "is_slice": self.is_slice,
                "block_id": self.block_id, "offset": self.offset, "vtype": self.vtype,
                "endpoint": self.endpoint}

    @classmethod
    def from_dict(cls, d) -> VarDistributed:
        return cls(VarStruct.from_dict(d["origin"]), VarStruct.from_dict(d["slice"]), bool(d["is_slice"]),
                   int(d["block_id"]), int(d["offset"]), d["vtype"], d.get("endpoint", ""))


@dataclass
class VarsDistributed:
    """All distributed pieces of a transpiled job, with the lookups the I/O code uses."""

    distributed_vars: list = field(default_factory=list)

    def add_distributed_var(self, origin_var, slice_var, is_slice=False, block_id=0, offset=0,
                            vtype="Param", endpoint="") -> VarDistributed:
        dv = VarDistributed(VarStruct.of(origin_var), VarStruct.of(slice_var), bool(is_slice),
                            int(block_id), int(offset), vtype, endpoint)
        self.distributed_vars.append(dv)
        return dv

    def get_distributed_var_by_slice(self, var_name: str):
        """The (first) piece whose slice is named var_name, or None."""
        return next((dv for dv in self.distributed_vars if dv.slice.name == var_name), None)

    def get_distributed_var_by_origin_and_ep(self, origin_var_name: str, endpoint: str):
        return next((dv for dv in self.distributed_vars
                     if dv.origin.name == origin_var_name and dv.endpoint == endpoint), None)

    def get_distributed_vars_by_origin(self, origin_var_name: str) -> list:
        return [dv for dv in self.distributed_vars if dv.origin.name == origin_var_name]

    def get_distributed_vars_by_ep(self, endpoint: str, vtype=None) -> list:
        return [dv for dv in self.distributed_vars
                if dv.endpoint == endpoint and (vtype is None or dv.vtype == vtype)]

    def get_distributed_vars_by_vtypes(self, vtypes, groupby: bool = False):
        """Pieces of the given kinds; with groupby, an OrderedDict origin name → [pieces]."""
        vtypes = [vtypes] if isinstance(vtypes, str) else list(vtypes)
        unknown = [v for v in vtypes if v not in VTYPES]
        if unknown:
            raise ValueError(f"unknown vtype(s) {unknown}: expected some of {VTYPES}")
        found = [dv for dv in self.distributed_vars if dv.vtype in vtypes]
        if not groupby:
            return found
        grouped = OrderedDict()
        for dv in found:
            grouped.setdefault(dv.origin.name, []).append(dv)
        return grouped

    def overview(self) -> str:
        return "\n".join(str(dv) for dv in self.distributed_vars)

    def __len__(self):
        return len(self.distributed_vars)

    def to_dict(self) -> dict:
        return {"distributed_vars": [dv.to_dict() for dv in self.distributed_vars]}

    @classmethod
    def from_dict(cls, d) -> VarsDistributed:
        return cls([VarDistributed.from_dict(x) for x in d.get("distributed_vars", [])])
