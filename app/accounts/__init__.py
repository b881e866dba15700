"""Who is using the box: sign-in, and the admin's view of runs and page figures."""
