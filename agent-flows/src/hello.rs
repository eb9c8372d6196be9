//! A small example flow: placeholder until the seed flows land.
