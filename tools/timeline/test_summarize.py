#!/usr/bin/env python3
"""Tests of summarize.py (ctest `TimelineSummary`, label cpu): bad inputs exit 1 with a message and
no traceback; a timeline of graph replays gives the per-kernel increments, the layer table and
leaves out a cut replay."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "summarize.py")
HEADER = "start_ns,end_ns,correlation,graph_id,graph_node,grid,block,smem,stream,name\n"


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class Summarize(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, data, mode="w"):
        path = os.path.join(self.dir.name, name)
        with open(path, mode) as f:
            f.write(data)
        return path

    def expect_error(self, args, needle):
        r = run(*args)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(needle, r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_bad_inputs(self):
        self.expect_error([os.path.join(self.dir.name, "missing.csv")], "cannot read")
        self.expect_error([self.dir.name], "cannot read")
        self.expect_error([self.write("empty.csv", "")], "is empty")
        self.expect_error([self.write("header.csv", HEADER)], "no CUDA graph replays")
        self.expect_error([self.write("other.csv", "a,b\n1,2\n")], "lacks the columns")
        self.expect_error([self.write("short.csv", HEADER + "1000,2000\n")], "short.csv:2")
        self.expect_error([self.write("text.csv", HEADER + "1,2,3,4,5,6,7,8,9,k\nx,2,3,4,5,6,7,8,9,k\n")], "text.csv:3")
        self.expect_error([self.write("bin.csv", bytes(range(128, 256)), "wb")], "not a text CSV")

    def test_replays(self):
        # Graph 3, 6 replays of: embed, 4 x (norm, gemm, attn), head; each kernel 1 us after the
        # previous one ends; the first replay is cut (its head is missing).
        names = ["void embed(P)"] + ["void norm(P)", "void dak::gemm<64; 8>(P)", "void attn(P)"] * 4 + ["void head(P)"]
        rows, t = [], 0
        for rep in range(6):
            for i, nm in enumerate(names):
                if rep == 0 and i == len(names) - 1:
                    continue
                rows.append(f"{t},{t + 1000},{100 + rep},3,{i},132,384,0,7,{nm}\n")
                t += 1000
        path = self.write("t.csv", HEADER + "".join(rows))
        r = run(path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("graph 3: 5 replays of 14 kernels (1 with another kernel count left out)", r.stdout)
        self.assertIn("gemm<64; 8>", r.stdout)
        self.assertIn("layer period 3 kernels from kernel 1 (4 periods)", r.stdout)
        self.assertRegex(r.stdout, r"norm\s+4\s+4\.0")  # 4 launches, 1 us each
        self.expect_error([path, "--layer", "4"], "periods 0 to 3")
        self.expect_error([path, "--min-replays", "6"], "no graph")


if __name__ == "__main__":
    unittest.main()
