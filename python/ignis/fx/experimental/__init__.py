"""ignis.fx.experimental: tracing tools (torch.fx.experimental's names)."""
