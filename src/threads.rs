//! Independent work spread over a fixed number of threads: the one place a thread pool is built
//! (an executor's attempts, a program's restarts). Results come back in the order of the items,
//! so they never depend on the number of threads.

use rayon::prelude::*;

/// `f` applied to every item, on `jobs` threads (sequentially for `jobs ≤ 1`, or if the pool
/// cannot be started), results in the order of `items`.
pub fn map_on_threads<T, R, F>(jobs: usize, items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync + Send,
{
    if jobs > 1 {
        if let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
            return pool.install(|| items.par_iter().map(&f).collect());
        }
    }
    items.iter().map(f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_order_of_the_items_for_any_number_of_threads() {
        let items: Vec<u64> = (0..200).collect();
        let square = |x: &u64| x * x;
        let sequential = map_on_threads(1, &items, square);
        assert_eq!(sequential, items.iter().map(square).collect::<Vec<_>>());
        assert_eq!(map_on_threads(2, &items, square), sequential);
        assert_eq!(map_on_threads(7, &items, square), sequential);
        assert!(map_on_threads(3, &[] as &[u64], square).is_empty());
    }
}
