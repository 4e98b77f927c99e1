"""`x2 eval`: a policy service drives episodes in the twin; the task DAG scores them; the dataset keeps them."""
