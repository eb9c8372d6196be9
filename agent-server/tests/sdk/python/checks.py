"""What the SDK check scripts share (sdk_check, stream_check, flows_check): the failure type,
`expect`, short reprs, and running one check with a timeout into a result line."""
import asyncio
import time
import traceback


class CheckFailed(AssertionError):
    pass


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def short(x, n=300):
    s = repr(x)
    return s if len(s) <= n else s[:n] + "..."


async def run_one(name, fn, client, timeout, results):
    """Runs check `fn(client)` within `timeout` (or the check's own `timeout` attribute, if
    longer); prints `ok NAME` or `FAIL NAME: why` (with the script's line that failed) and
    appends (name, passed) to `results`."""
    t0 = time.monotonic()
    try:
        await asyncio.wait_for(fn(client), max(timeout, getattr(fn, "timeout", 0.0)))
        line, ok = f"ok {name} ({time.monotonic() - t0:.1f}s)", True
    except CheckFailed as e:
        line, ok = f"FAIL {name}: {e}", False
    except asyncio.TimeoutError:
        line, ok = f"FAIL {name}: did not finish within {timeout}s", False
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"line {f.lineno}" for f in reversed(tb)
                      if f.filename == fn.__code__.co_filename), "")
        line, ok = f"FAIL {name}: {type(e).__name__}: {short(str(e), 400)} {where}".rstrip(), False
    print(line, flush=True)
    results.append((name, ok))
