"""Bad input to tensorrt_player: one clear line naming the file, a non-zero exit, no output left."""

from conftest import capture, play


def replay_of(tmp, data, name="bad.trtrace"):
    p = tmp / name
    p.write_bytes(data)
    return play(p, tmp / "out.engine", check=False)


def good_trace(tmp):
    capture("build_cnn.py", tmp / "good.trtrace", "--out", tmp / "app.engine")
    return (tmp / "good.trtrace").read_bytes()


def test_missing_capture_file(tmp):
    proc = play(tmp / "nope.trtrace", tmp / "out.engine", check=False)
    assert proc.returncode == 1
    assert "nope.trtrace" in proc.stderr and "cannot open" in proc.stderr
    assert not (tmp / "out.engine").exists()


def test_missing_capture_names_the_other_default_name_beside_it(tmp):
    """NVIDIA's shim names its capture capture.json, ours capture.trtrace: asked for one that is not
    there, the player names the other when it is beside it (either way), and only then."""
    (tmp / "capture.trtrace").write_bytes(good_trace(tmp))
    for asked, there in (("capture.json", "capture.trtrace"), ("capture.trtrace", "capture.json")):
        if there == "capture.json":
            (tmp / "capture.trtrace").rename(tmp / "capture.json")
        proc = play(tmp / asked, tmp / "out.engine", check=False)
        assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert f"{tmp / asked}: cannot open (No such file or directory); {tmp / there} is beside it" in proc.stderr
        assert proc.stderr.rstrip().endswith(f"tensorrt_player -j {tmp / there}")
        assert not (tmp / "out.engine").exists()
    proc = play(tmp / "other.trtrace", tmp / "out.engine", check=False)  # nothing beside it: the plain line
    assert proc.returncode == 1 and "beside" not in proc.stderr


def test_wrong_magic(tmp):
    proc = replay_of(tmp, b"GARBAGE!" + bytes(100))
    assert proc.returncode == 1
    assert "bad.trtrace" in proc.stderr and "not a trtrace file (bad magic)" in proc.stderr
    assert not (tmp / "out.engine").exists()


def test_corrupt_byte_in_the_call_log(tmp):
    data = bytearray(good_trace(tmp))
    data[200] ^= 0xFF  # inside the first blocks (header / call log)
    proc = replay_of(tmp, bytes(data))
    assert proc.returncode != 0 and proc.returncode != -11, proc.stderr
    assert "bad.trtrace" in proc.stderr
    assert proc.stderr.count("\n") <= 3
    assert not (tmp / "out.engine").exists()


def test_truncated_trace_replays_nothing_it_cannot_finish(tmp):
    data = good_trace(tmp)
    proc = replay_of(tmp, data[: len(data) // 3])
    # Cut inside the log: the complete prefix has no build, so no engine can be written.
    assert "truncated at offset" in proc.stderr
    assert not (tmp / "out.engine").exists()


def test_every_truncation_point_is_handled_without_a_crash(tmp):
    data = good_trace(tmp)
    for cut in range(0, len(data), max(1, len(data) // 40)):
        proc = replay_of(tmp, data[:cut], name=f"cut{cut}.trtrace")
        assert proc.returncode >= 0, f"cut at {cut}: killed by signal {-proc.returncode}\n{proc.stderr}"
