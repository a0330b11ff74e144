//! The `Retry-After` header of a rate-limited answer (RFC 9110, section 10.2.3): either a number
//! of seconds or an HTTP-date. Callers put their own floor under the wait it gives (a server
//! saying `0`, or a date already past, must not make milo retry at once, over and over).

use std::time::{Duration, SystemTime};

/// The wait `header` asks for, at most `cap`: its delay in seconds (a non-negative number,
/// fractions accepted), or its HTTP-date (IMF-fixdate, RFC 850 or asctime) less `now`, zero when
/// the date is past. `None` when it is neither (the caller's default applies).
pub fn parse(header: &str, now: SystemTime, cap: Duration) -> Option<Duration> {
    let header = header.trim();
    if let Ok(seconds) = header.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::from_secs_f64(seconds.min(cap.as_secs_f64())));
    }
    let at = httpdate::parse_http_date(header).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO).min(cap))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_http_dates_are_read_and_capped() {
        let cap = Duration::from_secs(600);
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(parse(" 7 ", now, cap), Some(Duration::from_secs(7)));
        assert_eq!(parse("0.25", now, cap), Some(Duration::from_millis(250)));
        assert_eq!(parse("99999999999", now, cap), Some(cap));
        for bad in ["-5", "NaN", "inf", "1e309", "soon", ""] {
            assert_eq!(parse(bad, now, cap), None, "{bad}");
        }
        // The three date forms HTTP allows, 90 s after `now`.
        for date in [
            "Wed, 21 Oct 2015 07:29:30 GMT",
            "Wednesday, 21-Oct-15 07:29:30 GMT",
            "Wed Oct 21 07:29:30 2015",
        ] {
            assert_eq!(
                parse(date, now, cap),
                Some(Duration::from_secs(90)),
                "{date}"
            );
        }
        assert_eq!(
            parse("Wed, 21 Oct 2015 07:00:00 GMT", now, cap),
            Some(Duration::ZERO),
            "a date past asks for no wait (the caller's floor applies)"
        );
        assert_eq!(parse("Thu, 21 Oct 2100 07:00:00 GMT", now, cap), Some(cap));
    }
}
