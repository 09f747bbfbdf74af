"""torch.stft and torch.istft (and their Tensor methods): the short-time Fourier
transform over frames of a signal, and its inverse by windowed overlap-add,
written over ignis.fft's transforms, unfold and fold (so both differentiate and
compile as the ops they are made of)."""


def _ig():
    import ignis
    return ignis


def _window(window, win_length, n_fft, dtype, device):
    """The window padded with zeros on both sides to n_fft (a rectangle of
    win_length ones when None)."""
    ig = _ig()
    if win_length is None:
        win_length = n_fft if window is None else window.shape[0]
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is None:
        window = ig.ones(win_length, dtype=dtype, device=device)
    if window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError("stft: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {list(window.shape)}")
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        window = ig.nn.functional.pad(window, (left, n_fft - win_length - left))
    return window


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None):
    """The short-time Fourier transform: frames of n_fft samples every
    hop_length (n_fft // 4 by default), each multiplied by the window and
    transformed; returns [batch?, frequencies, frames]."""
    ig = _ig()
    F = ig.nn.functional
    if return_complex is None:
        if not input.dtype.is_complex and (window is None or not window.dtype.is_complex):
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        return_complex = True
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D")
    if not 0 < n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft, but got n_fft={n_fft}")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    x = input.unsqueeze(0) if input.dim() == 1 else input
    if center:
        p = n_fft // 2
        x = F.pad(x.unsqueeze(1), (p, p), mode=pad_mode).squeeze(1)
    if not 0 < n_fft <= x.shape[-1]:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    real_dtype = x.dtype.to_real() if x.dtype.is_complex else (
        x.dtype if x.dtype.is_floating_point else ig.get_default_dtype())
    w = _window(window, win_length, n_fft, real_dtype, x.device)
    frames = x.unfold(-1, n_fft, hop_length) * w  # [batch, frames, n_fft]
    complex_signal = frames.dtype.is_complex
    if onesided is None:
        onesided = not complex_signal
    if onesided and complex_signal:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = ig.fft.rfft(frames, norm=norm) if onesided else ig.fft.fft(frames, norm=norm)
    spec = spec.transpose(-1, -2)
    if input.dim() == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else ig.view_as_real(spec)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse of stft: each frame transformed back, windowed, and added
    where the frames overlap, divided by the overlapping windows' squares."""
    ig = _ig()
    F = ig.nn.functional
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex values, "
                           f"but got {input.dim()}")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    spec = input.unsqueeze(0) if input.dim() == 2 else input  # [batch, freq, frames]
    n_frames = spec.shape[-1]
    if onesided is None:
        onesided = spec.shape[-2] != n_fft
    expected = n_fft // 2 + 1 if onesided else n_fft
    if spec.shape[-2] != expected:
        raise RuntimeError(f"istft: expected the frequency dim to have {expected} entries "
                           f"(n_fft={n_fft}, onesided={onesided}), but got {spec.shape[-2]}")
    w = _window(window, win_length, n_fft, spec.dtype.to_real(), spec.device)
    norm = "ortho" if normalized else "backward"
    s = spec.transpose(-1, -2)
    if onesided:
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        frames = ig.fft.irfft(s, n=n_fft, norm=norm)
    else:
        frames = ig.fft.ifft(s, n=n_fft, norm=norm)
        if not return_complex:
            frames = frames.real
    frames = frames * w  # [batch, frames, n_fft]
    total = n_fft + hop_length * (n_frames - 1)
    fold = dict(output_size=(1, total), kernel_size=(1, n_fft), stride=(1, hop_length))
    if frames.dtype.is_complex:
        y = ig.complex(F.fold(frames.real.transpose(1, 2), **fold),
                       F.fold(frames.imag.transpose(1, 2), **fold))
    else:
        y = F.fold(frames.transpose(1, 2), **fold)
    env = F.fold((w * w).expand(1, n_frames, n_fft).transpose(1, 2), **fold)
    y, env = y.reshape(y.shape[0], total), env.reshape(total)
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + length
    end = min(end, total)
    y, env = y[:, start:end], env[start:end]
    if bool((env.abs() < 1e-11).any()):
        raise RuntimeError("istft: window overlap add min: the window's squares add up to "
                           "(almost) zero at some samples, so the signal cannot be recovered "
                           "there (NOLA condition)")
    y = y / env
    if length is not None and y.shape[-1] < length:
        y = F.pad(y, (0, length - y.shape[-1]))
    return y.squeeze(0) if input.dim() == 2 else y
