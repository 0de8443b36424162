"""One replica's COM_BINLOG_DUMP stream, in modules by what they hold (issue 12):

params.py   what a dump is asked and what it did; start.py  file/pos and GTID start resolution;
stream.py   the per-connection loop: files, shared blocks, waiting, heartbeats, writing;
framing.py  the hot loop (decide + frame a chunk) and the frame cache shared by all dumps of a store;
records.py  the audit ledger's records, built only at the edges of runs.
"""

from .framing import FrameCache, FramedChunk, frames_of
from .params import DumpError, DumpParams, DumpStats, Writer
from .stream import ACKS_ASKED, WRITE_SLICE, DumpStream

__all__ = ["ACKS_ASKED", "WRITE_SLICE", "DumpError", "DumpParams", "DumpStats", "DumpStream", "FrameCache",
           "FramedChunk", "Writer", "frames_of"]
