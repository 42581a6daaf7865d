"""The injected world: clock, scheduler and file system.

Nothing in logwright that decides reads the wall clock, the real disk or the network directly;
it is handed these. In simulation they are virtual and seeded, so one seed reproduces one run.
"""

from logwright.world.clock import Clock, VirtualClock, WallClock
from logwright.world.fs import FileHandle, FileLock, FileSystem, write_file_atomic
from logwright.world.realfs import RealFileSystem
from logwright.world.scheduler import RealScheduler, Scheduler, SimScheduler, Task
from logwright.world.simfs import Fault, SimFileSystem, SimulatedCrash

__all__ = [
    "Clock",
    "Fault",
    "FileHandle",
    "FileLock",
    "FileSystem",
    "RealFileSystem",
    "RealScheduler",
    "Scheduler",
    "SimFileSystem",
    "SimScheduler",
    "SimulatedCrash",
    "Task",
    "VirtualClock",
    "WallClock",
    "write_file_atomic",
]
