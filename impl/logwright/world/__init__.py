"""The injected world: clock, scheduler, file system and network, and the two runtimes that
bundle them (:class:`SimWorld`, seeded and virtual; :class:`RealRuntime`, wall clock and real
disk).

Nothing in logwright that decides reads the wall clock, the real disk or the network directly;
it is handed these. In simulation they are virtual and seeded, so one seed reproduces one run.
"""

from logwright.world.clock import Clock, VirtualClock, WallClock
from logwright.world.fs import FileHandle, FileLock, FileSystem, write_file_atomic
from logwright.world.real import RealRuntime, make_data_root
from logwright.world.realfs import RealFileSystem
from logwright.world.scheduler import RealScheduler, Scheduler, SimScheduler, Task
from logwright.world.sim import SimWorld
from logwright.world.simfs import Fault, SimFileSystem, SimulatedCrash

__all__ = [
    "Clock",
    "Fault",
    "FileHandle",
    "FileLock",
    "FileSystem",
    "RealFileSystem",
    "RealRuntime",
    "RealScheduler",
    "Scheduler",
    "SimFileSystem",
    "SimScheduler",
    "SimWorld",
    "SimulatedCrash",
    "Task",
    "VirtualClock",
    "WallClock",
    "make_data_root",
    "write_file_atomic",
]
