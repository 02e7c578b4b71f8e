namespace fabricsim::models {}
