"""Processes and the files they share, knowing nothing of implementations or cases: copies of a
process made before any implementation was imported and new interpreters (``fresh``), the
heartbeats, hang count and last words a session's processes leave their supervisor
(``watch``), a command's event stream (``stream``), a real Ctrl-C told from a raised
``KeyboardInterrupt`` (``interrupts``), and writing a file whole (``atomic``).

Imports nothing of simacc (torch only where a fresh process pickles tensors, and lazily); the
fork servers import, by name, what the processes they fork would (the plugin, the properties,
the runner), never an implementation."""
