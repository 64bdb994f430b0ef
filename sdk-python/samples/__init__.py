"""XDB sample processes: user sign-up (the XDB design) and site creation (status-driven)."""
