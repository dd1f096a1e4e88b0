/* placeholder until written */ typedef int amp_placeholder_t;
