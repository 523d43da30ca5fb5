return { value: NaN };
