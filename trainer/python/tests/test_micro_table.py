"""The microbenchmarks' tables, from output shaped as micro.cu prints it."""
import io

import pytest

from schooner_interfere import micro_table

OUT = """\
{"device":"NVIDIA H200","sms":132,"l2_bytes":62914560,"cc":"9.0","driver":13000,"runtime":13000,"blocks_per_sm":4,"threads":256,"ms":200,"repeats":5}
{"mode":"alone","bench":"fp32","rate":51.2,"unit":"TFLOP/s","iters":4096,"ms_per_launch":1.01}
{"mode":"alone","bench":"dram","rate":4100,"unit":"GB/s","iters":4,"ms_per_launch":1.05}
{"mode":"l2-sweep","footprint_mib":32,"rate":9800,"unit":"GB/s","l2_mib":60.0}
{"mode":"l2-sweep","footprint_mib":128,"rate":4200,"unit":"GB/s","l2_mib":60.0}
{"mode":"back-to-back","a":"fp32","b":"dram","rate_a":50,"rate_b":4000,"slowdown_a":1.02,"slowdown_b":1.03}
{"mode":"colocated","a":"fp32","b":"fp32","rate_a":25,"rate_b":25,"slowdown_a":2.05,"slowdown_b":2.05}
{"mode":"colocated","a":"fp32","b":"dram","rate_a":45,"rate_b":3000,"slowdown_a":1.14,"slowdown_b":1.37}
"""


def test_tables_read_both_sides_of_a_pair():
    md = micro_table.render(micro_table.load(io.StringIO(OUT)))
    assert "NVIDIA H200 (cc 9.0, 132 SMs, L2 60 MiB)" in md
    assert "| fp32 | 51.2 | TFLOP/s | 1.01 |" in md
    assert "| 128 | 4200 |" in md
    colocated = md.split("Slowdown colocated")[1].split("Slowdown back-to-back")[0]
    assert "| fp32 | 2.05 | 1.14 |" in colocated, "fp32's slowdown beside fp32 and beside dram"
    assert "| dram | 1.37 | – |" in colocated, "dram beside fp32 comes from the (fp32, dram) record's b side"
    assert "| fp32 | – | 1.02 |" in md.split("Slowdown back-to-back")[1]


def test_bad_output_is_refused():
    with pytest.raises(SystemExit, match="no device line"):
        micro_table.load(io.StringIO('{"mode":"alone","bench":"x","rate":1,"unit":"u","ms_per_launch":1}\n'))
    with pytest.raises(SystemExit, match="line 2: not JSON"):
        micro_table.load(io.StringIO(OUT.splitlines()[0] + "\nnope\n"))
