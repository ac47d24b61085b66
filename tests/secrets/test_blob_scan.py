"""The secret scan of blobs that are not loaded (``secrets.blobs``, ``secrets.chunks``): rows of
a text read as a stream equal those of the whole text, blocks find what one scan of the whole
text finds (a PEM block across a block boundary included), the kinds of content, and a scan cut
by its byte bound keeps only whole lines and says it did not reach the end. Real: git
repositories and ``git cat-file`` streams; the texts are built here."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ocr_hook.diff import FileDiff
from ocr_hook.secrets import blobs, chunks
from ocr_hook.secrets.redaction import find_secrets
from tests.support.gitrepo import GitRepo
from tests.support.secret_corpus import corpus_files

AWS_KEY = "AKIA" + "IOSFODNN7BLOBSKEY"[:16]  # fake; assembled so scanners skip this file
PEM = "\n".join(["-----BEGIN " + "RSA PRIVATE KEY-----",
                 *(("MIIEowIBAAKCAQEA" + f"{i:02d}" * 22)[:64] for i in range(30)),
                 "-----END " + "RSA PRIVATE KEY-----"])


def pieces_of(text: str, seed: int, most: int) -> list[str]:
    rnd = random.Random(seed)
    out, at = [], 0
    while at < len(text):
        n = rnd.randint(1, most)
        out.append(text[at:at + n])
        at += n
    return out


@pytest.mark.parametrize("seed", range(6))
def test_rows_of_a_text_read_in_pieces_are_those_of_the_whole_text(seed: int) -> None:
    rnd = random.Random(seed)
    lines = ["".join(rnd.choice('ab c,"x') for _ in range(rnd.choice([0, 9, 20_000, 90_000])))
             for _ in range(8)]
    text = "\n".join(lines)
    whole = list(chunks.stream_rows([text]))
    assert list(chunks.stream_rows(pieces_of(text, seed, 70_000))) == whole
    assert [n for n, _ in whole] == sorted(n for n, _ in whole)
    for n, line in enumerate(lines, 1):
        rows = [r for m, r in whole if m == n]
        if len(line) <= chunks.LINE_WINDOW_CHARS:
            assert rows == [line]
        else:  # windows of at most LINE_WINDOW_CHARS that start and end the line
            assert max(map(len, rows)) <= chunks.LINE_WINDOW_CHARS
            assert line.startswith(rows[0]) and line.endswith(rows[-1])


def test_block_scan_finds_what_one_scan_of_the_whole_text_finds() -> None:
    filler = "".join(f'  {{"id": {i:08d}, "v": "abc"}},\n' for i in range(9_000))
    text = ("".join(corpus_files().values()) + filler) * 6
    assert len(text) > 4 * chunks.BLOCK_CHARS
    want = {(h.line, h.type) for h in find_secrets(text)}
    got = {(h.first_line, h.hit.type) for h in chunks.scan_rows(chunks.stream_rows([text]))}
    assert got == want


def test_a_pem_block_across_a_block_boundary_is_one_whole_hit() -> None:
    row = "x = 1  # " + "p" * 50 + "\n"
    head = row * (chunks.BLOCK_CHARS // len(row) - 10)  # the block ends inside the PEM block
    text = head + PEM + "\n" + row * 50
    assert len(head) < chunks.BLOCK_CHARS < len(head) + len(PEM)
    [h] = chunks.scan_rows(chunks.stream_rows([text]))
    first = head.count("\n") + 1
    assert (h.hit.type, h.first_line, h.last_line) == ("private-key", first, first + 31)
    assert PEM.split("\n")[-2] in h.hit.value  # the last body row: seen whole


@pytest.mark.parametrize(("head", "kind"), [
    (b"plain text\n" * 1000, "text"),
    (b"x = 1\n\0\ny = 2\n", "text_with_nul"),
    (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "binary"),
    (b"PK\x03\x04\x14\0\0\0\x08\0", "binary"),
    (b"\x7fELF\x02\x01\x01\0\0\0", "binary"),
    ("UTF-16 text\n".encode("utf-16-le"), "utf16le"),  # no BOM: NUL high bytes, ASCII low
    ("UTF-16 text\n".encode("utf-16-be"), "utf16be"),
    ("\ufeffx".encode("utf-16-le"), "utf16le"),  # a BOM says it, however short
    ("\ufeffx".encode("utf-16-be"), "utf16be"),
    ("short".encode("utf-16-le"), "binary"),  # under UTF16_MIN_PROBE without a BOM
    (bytes([1, 0, 2, 0, 3, 0, 4, 0] * 4), "binary"),  # 16-bit words of control bytes
    (b"SQLite format 3\0\x10\0\x01\x01", "binary"),
])
def test_blob_kind(head: bytes, kind: str) -> None:
    assert blobs.blob_kind(head) == kind


def stage(repo: GitRepo, name: str, data: bytes) -> FileDiff:
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({name: data})
    oid = repo.git("rev-parse", f":{name}").strip()
    return FileDiff("added", name, name, "000000", "100644", "0" * 40, oid,
                    size_bytes=len(data))


def test_a_scan_cut_by_its_bound_scans_whole_lines_only_and_says_so(repo: GitRepo) -> None:
    rows = b"".join(b"v%05d = 1\n" % i for i in range(1000))  # 11,000 bytes
    data = rows + f'KEY = "{AWS_KEY}"\n'.encode()
    fd = stage(repo, "conf.py", data)
    cut = blobs.scan_blob(Path(repo.path), fd, (), len(rows) + 10)  # inside the key's line
    assert (cut.findings, cut.scanned_bytes, cut.complete) == ([], len(rows), False)
    assert len(data) == 11_029
    assert cut.statement == "secret scan: first 10.7 KiB of 10.8 KiB scanned, no secret found"
    whole = blobs.scan_blob(Path(repo.path), fd, (), len(data))  # exactly its size: the end
    assert (whole.scanned_bytes, whole.complete) == (len(data), True)
    [f] = whole.findings
    assert (f.start_line, f.existing_code) == (1001, 'KEY = "[REDACTED:aws-access-key]"')


def test_a_one_line_blob_cut_by_its_bound_is_scanned_as_far_as_it_was_read(repo: GitRepo
                                                                            ) -> None:
    line = b"var a=[" + b"1," * 50_000 + f'];k="{AWS_KEY}";'.encode() + b"2," * 50_000
    fd = stage(repo, "bundle.js", line)
    scan = blobs.scan_blob(Path(repo.path), fd, (), 150_000)
    assert (scan.scanned_bytes, scan.complete, len(scan.findings)) == (150_000, False, 1)
    assert scan.findings[0].start_line == 1
