await Promise.reject(42)
