wipefs --no-act --json /nonexistent
# a path that does not exist
