namespace fabricsim::calibration {}
