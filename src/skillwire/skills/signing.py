"""Signed skill folders: Ed25519 over a canonical manifest of the folder's file digests.

    private, public = new_key_pair()                  # PEM bytes
    sign_folder(Path("skills/refund"), private)       # writes SKILLWIRE-SIGNATURE.json
    verdict = verify_folder(Path("skills/refund"), trusted=[public])
    if not verdict.ok:
        print(verdict.reason)

What is signed is a skill's folder: a package folder, or the folder holding a single-file
skill (its ``python`` tools live beside it). The manifest lists every regular file under
the folder by its path (``/``-separated, relative) and SHA-256, and names the skill's id;
the signature file holds the manifest, the public key and the signature over the
canonical JSON of both. Verification fails, with the reason, when:

- there is no signature file, or it is not one (``unsigned``, ``invalid``);
- the signature does not match the manifest and key it holds (``tampered``: the manifest
  was edited, or the key swapped);
- a file changed, was removed, added or renamed, or the folder holds a symbolic link
  (never signed: it could lead anywhere) (``tampered``);
- the manifest names another skill than the one loaded from the folder (``tampered``:
  another package's signature replayed);
- the key is not one of the trusted keys (``untrusted``).

``__pycache__`` folders are left out of the manifest (Python writes them when a
``python`` tool runs); docs/lifecycle.md says what that leaves open.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skillwire.core.errors import UsageError

__all__ = [
    "SIGNATURE_FILE",
    "SIGNATURE_VERSION",
    "TrustPolicy",
    "Verdict",
    "folder_digests",
    "key_id",
    "load_public_key",
    "new_key_pair",
    "sign_folder",
    "trusted_keys",
    "verify_folder",
]

SIGNATURE_FILE = "SKILLWIRE-SIGNATURE.json"
"""The signature's file name, in the signed folder (never part of the manifest)."""

SIGNATURE_VERSION = "skillwire-signature/v1"
"""The signature file's ``schemaVersion``."""

_SKIPPED_DIRS = frozenset({"__pycache__"})
_MAX_FILES = 10_000

Reason = Literal["ok", "unsigned", "invalid", "tampered", "untrusted"]


@dataclass(frozen=True)
class Verdict:
    """The outcome of a verification: ``ok``, or why not, with the details."""

    status: Reason
    reason: str
    key_id: str | None = None
    problems: tuple[str, ...] = ()
    skill_id: str | None = None
    """The skill the manifest names (once the signature is known to be genuine)."""

    @property
    def ok(self) -> bool:
        """Signed, unchanged, by a trusted key (or by any key when none was required)."""
        return self.status == "ok"


@dataclass
class TrustPolicy:
    """The operator's trust: the public keys trusted, and the folders whose skills must
    be signed by one of them (``skillwire.toml`` ``[trust]``)."""

    keys: list[bytes] = field(default_factory=list)
    """Trusted public keys (PEM or raw 32 bytes)."""
    required: list[Path] = field(default_factory=list)
    """Folders (resolved) under which every skill must carry a trusted signature."""

    def requires(self, folder: Path) -> bool:
        """Whether a skill in ``folder`` must be signed."""
        real = folder.resolve()
        return any(real == root or real.is_relative_to(root) for root in self.required)


def new_key_pair() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair: the private key (PKCS#8 PEM) and the public key (PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


def load_public_key(data: bytes) -> bytes:
    """The raw 32 bytes of an Ed25519 public key given as PEM or raw bytes."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if len(data) == 32:
        return data
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise UsageError(f"not a public key: {exc}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError("not an Ed25519 public key")
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(raw_public: bytes) -> str:
    """A short name of a public key: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(raw_public).hexdigest()[:16]


def folder_digests(folder: Path) -> tuple[dict[str, str], list[str]]:
    """``{relative path: sha256}`` of every regular file under ``folder`` (the signature
    file and ``__pycache__`` left out), and what cannot be signed (symbolic links,
    special files), sorted."""
    digests: dict[str, str] = {}
    refused: list[str] = []
    root = Path(folder)
    pending = [root]
    while pending:
        current = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            refused.append(f"{current}: cannot be listed ({exc.strerror})")
            continue
        for entry in entries:
            rel = Path(entry.path).relative_to(root).as_posix()
            if entry.is_symlink():
                refused.append(f"{rel}: a symbolic link (never signed)")
            elif entry.is_dir(follow_symlinks=False):
                if entry.name not in _SKIPPED_DIRS:
                    pending.append(Path(entry.path))
            elif not stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                refused.append(f"{rel}: not a regular file")
            elif rel != SIGNATURE_FILE:
                digests[rel] = _sha256(Path(entry.path))
            if len(digests) > _MAX_FILES:
                raise UsageError(f"{folder}: more than {_MAX_FILES} files")
    return dict(sorted(digests.items())), sorted(refused)


def sign_folder(folder: Path, private_pem: bytes, skill_id: str) -> Path:
    """Sign ``folder`` (the skill ``skill_id``) with the private key; write and return the
    signature file. Raises :class:`UsageError` for a folder with a link or special file."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(private_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"not a private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError("not an Ed25519 private key")
    digests, refused = folder_digests(folder)
    if refused:
        raise UsageError(f"{folder} cannot be signed: " + "; ".join(refused))
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    body = _body(skill_id, digests, raw)
    signed = dict(body, signature=_b64(key.sign(_canonical(body))), key_id=key_id(raw))
    path = folder / SIGNATURE_FILE
    path.write_text(json.dumps(signed, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def verify_folder(
    folder: Path, *, skill_id: str | None = None, trusted: Sequence[bytes] | None = None
) -> Verdict:
    """Check the signature of ``folder`` (module text). ``skill_id``: the skill loaded
    from it, which the manifest must name; ``trusted``: the keys accepted (None: any key,
    which proves integrity only)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    path = folder / SIGNATURE_FILE
    if path.is_symlink() or not path.is_file():
        return Verdict("unsigned", f"{folder} is not signed (no {SIGNATURE_FILE})")
    try:
        data = json.loads(path.read_bytes()[:10_000_000])
        body, signature, raw = _parse(data)
    except (ValueError, KeyError, TypeError) as exc:
        return Verdict("invalid", f"{path} is not a skillwire signature: {exc}")
    kid = key_id(raw)
    try:
        Ed25519PublicKey.from_public_bytes(raw).verify(signature, _canonical(body))
    except (InvalidSignature, ValueError):
        return Verdict("tampered", f"{path}: the signature does not match its manifest", kid)
    signed_id = str(body["skill_id"])
    problems = _compare(folder, body["files"])
    if skill_id is not None and signed_id != skill_id:
        problems.insert(0, f"signed for skill '{signed_id}', not '{skill_id}'")
    if problems:
        shown = "; ".join(problems[:5])
        if len(problems) > 5:
            shown += f" (and {len(problems) - 5} more)"
        reason = f"{folder} changed since it was signed: {shown}"
        return Verdict("tampered", reason, kid, tuple(problems), signed_id)
    if trusted is not None and raw not in {load_public_key(k) for k in trusted}:
        reason = f"{folder} is signed by key {kid}, which is not trusted"
        return Verdict("untrusted", reason, kid, skill_id=signed_id)
    return Verdict("ok", f"{folder} is signed by key {kid}", kid, skill_id=signed_id)


def _compare(folder: Path, signed: dict[str, str]) -> list[str]:
    digests, refused = folder_digests(folder)
    problems = list(refused)
    for name in sorted(signed.keys() - digests.keys()):
        problems.append(f"{name}: removed")
    for name in sorted(digests.keys() - signed.keys()):
        problems.append(f"{name}: added")
    for name in sorted(signed.keys() & digests.keys()):
        if signed[name] != digests[name]:
            problems.append(f"{name}: changed")
    return problems


def _parse(data: Any) -> tuple[dict[str, Any], bytes, bytes]:
    if not isinstance(data, dict) or data.get("schemaVersion") != SIGNATURE_VERSION:
        raise ValueError(f"schemaVersion is not {SIGNATURE_VERSION}")
    files = data["files"]
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise ValueError("files is not a map of paths to digests")
    skill = data["skill_id"]
    if not isinstance(skill, str):
        raise ValueError("skill_id is not text")
    raw = base64.b64decode(data["public_key"], validate=True)
    signature = base64.b64decode(data["signature"], validate=True)
    if len(raw) != 32:
        raise ValueError("public_key is not an Ed25519 key")
    return _body(skill, files, raw), signature, raw


def _body(skill_id: str, files: dict[str, str], raw_public: bytes) -> dict[str, Any]:
    return {
        "schemaVersion": SIGNATURE_VERSION,
        "skill_id": skill_id,
        "files": dict(sorted(files.items())),
        "public_key": _b64(raw_public),
    }


def _canonical(body: dict[str, Any]) -> bytes:
    """The bytes signed: JSON, keys sorted, no spaces, ASCII only."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def trusted_keys(files: Iterable[Path]) -> list[bytes]:
    """The public keys in these files (PEM), each checked."""
    keys = []
    for file in files:
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read the trusted key {file}: {exc.strerror}") from None
        keys.append(load_public_key(data))
    return keys
