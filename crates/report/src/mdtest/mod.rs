//! mdtest report formats (text, JSON, CSV).
