await Promise.reject(undefined)
