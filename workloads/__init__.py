"""The application model (apps as DAGs of LLM calls) and one generator per paper workload."""
