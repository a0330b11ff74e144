//! Number-theoretic transforms modulo word-sized primes.
