"""Classic PyTorch programs (after the pytorch/examples set; written here)
run unchanged on ignis and on torch from the same weights and data: a DCGAN
step (transposed convolutions, batch norm, LeakyReLU, BCELoss, Adam with
betas), a VAE step (the reparameterisation with a fixed noise draw, BCE +
KL), a super-resolution net (conv + PixelShuffle, MSE, Adam) and REINFORCE
(Categorical policy, log_prob of fixed actions, discounted returns). The
time-sequence predictor (LSTMCells trained by LBFGS) is in test_rnn.py, the
word language models in test_rnn.py and bench/programs.py.
Each program's code takes the library as an argument (`lib` is ignis or
torch), as `import ignis as torch` would run it; the losses and the
parameters after the steps must agree.
"""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

torch = pytest.importorskip("torch")


def same_weights(mi, mt):
    """torch's module gets ignis's initial weights (and buffers)."""
    with torch.no_grad():
        for (k, a), (_, b) in zip(mi.state_dict().items(), mt.state_dict().items()):
            b.copy_(torch.from_numpy(a.detach().numpy().copy()))


def close_states(mi, mt, rtol=2e-4, atol=2e-5):
    for (k, a), (_, b) in zip(mi.state_dict().items(), mt.state_dict().items()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol,
                                   err_msg=k)


def arr(lib, x):
    return lib.from_numpy(np.asarray(x).copy())


def run_both(build, program):
    ignis.manual_seed(0)
    mi, mt = build(ignis), build(torch)
    same_weights(mi, mt)
    li, lt = program(ignis, mi), program(torch, mt)
    np.testing.assert_allclose(li, lt, rtol=2e-4, atol=2e-5)
    close_states(mi, mt)


# ---- DCGAN ------------------------------------------------------------------------------------

def dcgan(lib):
    nn = lib.nn

    class GD(nn.Module):
        def __init__(self):
            super().__init__()
            self.G = nn.Sequential(
                nn.ConvTranspose2d(16, 32, 4, 1, 0, bias=False), nn.BatchNorm2d(32), nn.ReLU(True),
                nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(True),
                nn.ConvTranspose2d(16, 1, 4, 2, 1, bias=False), nn.Tanh())
            self.D = nn.Sequential(
                nn.Conv2d(1, 16, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(16, 32, 4, 2, 1, bias=False), nn.BatchNorm2d(32),
                nn.LeakyReLU(0.2, inplace=True), nn.Conv2d(32, 1, 4, 1, 0, bias=False),
                nn.Sigmoid())

    return GD()


def dcgan_steps(lib, m):
    rng = np.random.default_rng(1)
    crit = lib.nn.BCELoss()
    opt_d = lib.optim.Adam(m.D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = lib.optim.Adam(m.G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    losses = []
    for _ in range(2):
        real = arr(lib, rng.uniform(-1, 1, (8, 1, 16, 16)).astype(np.float32))
        noise = arr(lib, rng.standard_normal((8, 16, 1, 1)).astype(np.float32))
        ones, zeros = lib.full((8,), 1.0), lib.full((8,), 0.0)
        m.D.zero_grad()
        err_real = crit(m.D(real).view(-1), ones)
        err_real.backward()
        fake = m.G(noise)
        err_fake = crit(m.D(fake.detach()).view(-1), zeros)
        err_fake.backward()
        opt_d.step()
        m.G.zero_grad()
        err_g = crit(m.D(fake).view(-1), ones)
        err_g.backward()
        opt_g.step()
        losses += [err_real.item(), err_fake.item(), err_g.item()]
    return losses


def test_dcgan_trains_as_in_torch():
    run_both(dcgan, dcgan_steps)


# ---- VAE --------------------------------------------------------------------------------------

def vae(lib):
    nn, F = lib.nn, lib.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc21, self.fc22 = nn.Linear(64, 32), nn.Linear(32, 8), nn.Linear(32, 8)
            self.fc3, self.fc4 = nn.Linear(8, 32), nn.Linear(32, 64)

        def forward(self, x, eps):
            h = F.relu(self.fc1(x))
            mu, logvar = self.fc21(h), self.fc22(h)
            z = mu + eps * lib.exp(0.5 * logvar)
            return lib.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar

    return VAE()


def vae_steps(lib, m):
    F = lib.nn.functional
    rng = np.random.default_rng(2)
    opt = lib.optim.Adam(m.parameters(), lr=1e-3)
    losses = []
    for _ in range(3):
        x = arr(lib, rng.uniform(0, 1, (16, 64)).astype(np.float32))
        eps = arr(lib, rng.standard_normal((16, 8)).astype(np.float32))
        opt.zero_grad()
        recon, mu, logvar = m(x, eps)
        bce = F.binary_cross_entropy(recon, x, reduction="sum")
        kld = -0.5 * lib.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = bce + kld
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_vae_trains_as_in_torch():
    run_both(vae, vae_steps)


# ---- super-resolution (ESPCN) -----------------------------------------------------------------

def espcn(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self, r=2):
            super().__init__()
            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 16, 5, 1, 2)
            self.conv2 = nn.Conv2d(16, 16, 3, 1, 1)
            self.conv3 = nn.Conv2d(16, r * r, 3, 1, 1)
            self.shuffle = nn.PixelShuffle(r)

        def forward(self, x):
            return self.shuffle(self.conv3(self.relu(self.conv2(self.relu(self.conv1(x))))))

    return Net()


def espcn_steps(lib, m):
    rng = np.random.default_rng(3)
    opt = lib.optim.Adam(m.parameters(), lr=1e-3)
    crit = lib.nn.MSELoss()
    losses = []
    for _ in range(3):
        lo = arr(lib, rng.uniform(0, 1, (4, 1, 8, 8)).astype(np.float32))
        hi = arr(lib, rng.uniform(0, 1, (4, 1, 16, 16)).astype(np.float32))
        opt.zero_grad()
        loss = crit(m(lo), hi)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_super_resolution_trains_as_in_torch():
    run_both(espcn, espcn_steps)


# ---- REINFORCE --------------------------------------------------------------------------------

def policy(lib):
    nn = lib.nn

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1, self.dropout = nn.Linear(4, 32), nn.Dropout(p=0.0)
            self.affine2 = nn.Linear(32, 2)

        def forward(self, x):
            x = lib.relu(self.dropout(self.affine1(x)))
            return lib.nn.functional.softmax(self.affine2(x), dim=1)

    return Policy()


def reinforce_steps(lib, m):
    # An episode of fixed states, actions and rewards (the environment is not
    # the point): log-probabilities of the actions under the policy, returns
    # discounted and normalised, the policy-gradient loss, Adam.
    Categorical = lib.distributions.Categorical
    rng = np.random.default_rng(4)
    opt = lib.optim.Adam(m.parameters(), lr=1e-2)
    eps = np.finfo(np.float32).eps.item()
    losses = []
    for _ in range(2):
        states = rng.standard_normal((10, 4)).astype(np.float32)
        actions = rng.integers(0, 2, 10)
        rewards = rng.uniform(0, 1, 10)
        log_probs = []
        for s, a in zip(states, actions):
            probs = m(arr(lib, s[None]))
            log_probs.append(Categorical(probs).log_prob(arr(lib, [a])))
        R, returns = 0.0, []
        for r in rewards[::-1]:
            R = r + 0.99 * R
            returns.insert(0, R)
        returns = lib.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        loss = lib.cat([-lp * ret for lp, ret in zip(log_probs, returns)]).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_reinforce_trains_as_in_torch():
    run_both(policy, reinforce_steps)
