"""Tasks: what a network is trained on. Each follows the protocol of ``protocol.Task``.

protocol          the task protocol the engine reads, the masked MSE
teacher_student   Sec. 4.1: sequences labelled by a linear self-attention teacher
regression        Sec. 5: in-context linear regression and one step of gradient descent
gd_theory         App. D.2: the optimal GD step's learning rate and loss, derived with sympy
associative_recall  App. D.3: one-hot key-value pairs and a query, the value to recall
"""

from .protocol import Task, check_task, masked_mse
from .regression import InContextRegression
from .teacher_student import TeacherStudentTask

__all__ = ["InContextRegression", "Task", "TeacherStudentTask", "check_task", "masked_mse"]
