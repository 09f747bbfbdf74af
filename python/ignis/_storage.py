"""Tensor.untyped_storage() and Tensor.storage(): views of the memory a tensor's
elements live in, as torch's UntypedStorage (bytes) and TypedStorage (elements of
the tensor's dtype). Programs read them to tell whether two tensors share memory
(`a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()`: HF's
checkpoint code, safetensors), how large it is, or its values. They hold the
tensor they came from, so the memory lives as long as they do."""


def _ig():
    import ignis
    return ignis


class UntypedStorage:
    """The bytes of a tensor's storage (all of it, not just the tensor's elements)."""

    def __init__(self, tensor):
        self._tensor = tensor.detach()

    def data_ptr(self):
        return self._tensor._storage_ptr()

    def nbytes(self):
        return self._tensor._storage_nbytes()

    def size(self):
        return self.nbytes()

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        return 1

    @property
    def device(self):
        return self._tensor.device

    @property
    def dtype(self):
        return _ig().uint8

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def is_shared(self):
        return False

    def _elements(self, dtype):
        """The whole storage as a 1-D tensor of `dtype`, sharing its memory."""
        t = self._tensor
        n = t._storage_nbytes() // t.element_size()
        whole = t.as_strided([n], [1], 0)
        return whole if dtype == t.dtype else whole.view(dtype)

    def tolist(self):
        return self._elements(_ig().uint8).tolist()

    def __getitem__(self, i):
        return self._elements(_ig().uint8)[i].item()

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self):
        return f"ignis.UntypedStorage of {self.nbytes()} bytes on {self.device}"


class TypedStorage:
    """A tensor's storage as elements of its dtype."""

    def __init__(self, tensor):
        self._untyped_storage = UntypedStorage(tensor)
        self.dtype = tensor.dtype

    def untyped(self):
        return self._untyped_storage

    def data_ptr(self):
        return self._untyped_storage.data_ptr()

    def nbytes(self):
        return self._untyped_storage.nbytes()

    def element_size(self):
        return self.dtype.itemsize

    def size(self):
        return self.nbytes() // self.element_size()

    def __len__(self):
        return self.size()

    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def is_shared(self):
        return False

    def tolist(self):
        return self._untyped_storage._elements(self.dtype).tolist()

    def __getitem__(self, i):
        return self._untyped_storage._elements(self.dtype)[i].item()

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self):
        return f"ignis.TypedStorage of {self.size()} {self.dtype} elements on {self.device}"


def install(tensor_cls):
    tensor_cls.untyped_storage = lambda self: UntypedStorage(self)
    tensor_cls.storage = lambda self: TypedStorage(self)
    tensor_cls.is_shared = lambda self: False
