"""ignis.utils.data: datasets, samplers, collation and DataLoader, with
torch.utils.data's API and semantics (docs/data_and_serialization.md)."""
from .dataset import (  # noqa: F401
    Dataset, IterableDataset, TensorDataset, ConcatDataset, ChainDataset, StackDataset, Subset,
    random_split,
)
from .sampler import (  # noqa: F401
    Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
    BatchSampler,
)
from .collate import default_collate, default_convert  # noqa: F401
from .worker import get_worker_info, WorkerInfo  # noqa: F401
from .dataloader import DataLoader  # noqa: F401
from . import distributed  # noqa: F401
from .distributed import DistributedSampler  # noqa: F401

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
           "StackDataset", "Subset", "DistributedSampler",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "default_collate", "default_convert",
           "get_worker_info", "WorkerInfo", "DataLoader"]
