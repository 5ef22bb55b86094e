-- The fixture database sql_exec.py runs answers against: a small shop.
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price REAL NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                     product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL,
                     ordered_on TEXT NOT NULL);

INSERT INTO customers VALUES
  (1, 'Ada', 'UK'), (2, 'Grace', 'US'), (3, 'Linus', 'FI'), (4, 'Margaret', 'US'), (5, 'Tim', 'UK');
INSERT INTO products VALUES
  (1, 'Keyboard', 'hardware', 49.5), (2, 'Mouse', 'hardware', 19.0), (3, 'Monitor', 'hardware', 189.0),
  (4, 'IDE licence', 'software', 99.0), (5, 'Backup plan', 'software', 5.0);
INSERT INTO orders VALUES
  (1, 1, 1, 1, '2024-01-03'), (2, 1, 2, 2, '2024-01-03'), (3, 2, 3, 1, '2024-01-15'),
  (4, 3, 4, 3, '2024-02-01'), (5, 4, 5, 12, '2024-02-11'), (6, 2, 4, 1, '2024-02-20'),
  (7, 5, 1, 1, '2024-03-02'), (8, 4, 3, 2, '2024-03-09'), (9, 3, 2, 1, '2024-03-15');
