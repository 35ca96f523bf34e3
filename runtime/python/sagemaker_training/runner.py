"""How an entry point is launched. trainctl's agent launches the job's
ranks itself (docs/distributed.md); a script that calls entry_point.run
runs its program as one more process of its own rank."""
import enum


class RunnerType(enum.Enum):
    """The toolkit's launchers."""
    MPI = "MPI"
    Process = "Process"
    SMDataParallel = "SMDataParallel"
    PyTorchXLA = "PyTorchXLA"
    TorchDistributed = "TorchDistributed"


ProcessRunnerType = RunnerType.Process
MPIRunnerType = RunnerType.MPI
SMDataParallelRunnerType = RunnerType.SMDataParallel
PyTorchXLARunnerType = RunnerType.PyTorchXLA
TorchDistributedRunnerType = RunnerType.TorchDistributed
