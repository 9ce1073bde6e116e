int main() { return 1; }  // placeholder until the daemon is wired
